// A latency quantile of the samples a benchmark took: shared by the
// benchmarks that print p50 / p99 / p99.9 (long_bench, serve_bench,
// scale/serve.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace bench {

// The sample at rank floor(q * n) of n (the largest for q near 1); 0 with
// no samples. Takes a copy: it reorders it.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

}  // namespace bench
