// The mutable tier's store behind uih/mutable.h, seen from the rest of the
// store: its keys, its column family's options, and a mutable tier over a
// shard database the store owns.
#pragma once

#include <cstdint>
#include <string>

#include "rocksdb/db.h"
#include "uih/key.h"
#include "uih/mutable.h"

struct uih_mutable;

namespace uih {

// For C++ embedders and tests: the database and column family of a store.
rocksdb::DB* MutableDB(uih_mutable* m);
rocksdb::ColumnFamilyHandle* MutableColumnFamily(uih_mutable* m);

// The key of the chunk holding `ts` in (user, group)'s history, for a store
// of chunk span `span` (0: the 10-byte key of a store without chunks); its
// length.
size_t MutableKey(int64_t span, uint64_t user, uint16_t group, int64_t ts, uint8_t key[UIH_KEY_SIZE]);
// [begin, end): every key of (user, group)'s history, chunked or not.
void MutableKeyRange(uint64_t user, uint16_t group, uint8_t begin[UIH_KEY_GROUP_PREFIX_SIZE],
                     uint8_t end[UIH_KEY_SIZE]);

// The options of column family uih.mutable (merge operator, retention,
// bloom filter, compression) for the settings `o`.
rocksdb::ColumnFamilyOptions MutableCfOptions(const uih_mutable_opts& o);

// A mutable tier over a database someone else owns (a store's shard): the
// handles stay theirs and must outlive it; free it with FreeMutable.
int AdoptMutable(const std::string& path, const uih_schema* schema, rocksdb::DB* db,
                 rocksdb::ColumnFamilyHandle* events, rocksdb::ColumnFamilyHandle* meta, uih_mutable** out,
                 uih_error* err);
void FreeMutable(uih_mutable* m);
// Sets the schema appends and reads use (an adopted store's, once read).
void SetMutableSchema(uih_mutable* m, const uih_schema* schema);
// uih_mutable_read of only the newest `newest` events in [min_ts, max_ts]
// (the older ones are not decoded): what a snapshot of max_length needs.
// Not behind the exception firewall: for callers already behind it.
int ReadMutableNewest(uih_mutable* m, uint64_t user_id, uint16_t group, int64_t min_ts, int64_t max_ts,
                      uint32_t newest, uih_batch** batch, uih_error* err);

}  // namespace uih
