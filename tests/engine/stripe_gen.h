// Random schemas and batches for stripe codec tests: every trait type,
// value shapes that stress each encoding, and extreme values.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "uih/batch.h"
#include "uih/schema.h"

namespace uih_test {

// A JSON schema with one group (id 3) of `ntraits` random traits besides
// the timestamp, with random encoding and compression hints.
std::string RandomSchemaJson(std::mt19937_64& rng, int ntraits);

// Value shapes a column can take.
enum class Shape {
  kRandom,     // uniform over the type's range
  kSmallRange, // a narrow band around a random base
  kConstant,
  kRuns,       // long runs of few values
  kFewDistinct,
  kSparse,     // mostly zero
  kMonotonic,  // non-decreasing with small steps
  kStepped,    // multiples of a common step above a base (prices in cents, ...)
  kExtremes,   // min/max of the type, zero, and neighbours
  kCount
};

// Fills `b` with `n` events: timestamps non-decreasing (with duplicates,
// and in a quarter of the batches a multiple of a period apart: day- or
// second-granular times in finer units),
// each other column shaped by a random Shape and a random presence pattern
// (all, none, dense, sparse).
void FillRandomBatch(std::mt19937_64& rng, uih_batch* b, uint32_t n);

// True when both batches hold the same events: count, presence and bits of
// every column of `want` (matched by trait id in `got`).
::testing::AssertionResult SameEvents(const uih_batch* want, uint32_t want_begin,
                                      const uih_batch* got);

}  // namespace uih_test
