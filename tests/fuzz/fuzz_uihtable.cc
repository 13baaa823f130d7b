// Fuzz target: opening and reading an arbitrary file as a UihTable, through
// RocksDB's SstFileReader on an in-memory Env. Any bytes must give an error
// status or a readable table whose forward and backward scans agree.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/env.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "uih_plugin/table.h"

using namespace rocksdb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Env* env = NewMemEnv(Env::Default());
  const std::string path = "/fuzz.sst";
  {
    std::unique_ptr<WritableFile> f;
    if (!env->NewWritableFile(path, &f, EnvOptions()).ok()) abort();
    if (!f->Append(Slice(reinterpret_cast<const char*>(data), size)).ok() || !f->Close().ok()) abort();
  }
  Options o;
  o.env = env;
  o.table_factory.reset(new uih::UihTableFactory());
  SstFileReader r(o);
  if (!r.Open(path).ok()) return 0;
  (void)r.VerifyChecksum();
  ReadOptions ro;
  ro.verify_checksums = size % 2 == 0;
  std::unique_ptr<Iterator> it(r.NewIterator(ro));
  std::vector<std::string> keys;
  for (it->SeekToFirst(); it->Valid() && keys.size() < 100000; it->Next()) keys.push_back(it->key().ToString());
  bool forward_ok = it->status().ok();
  size_t back = 0;
  for (it->SeekToLast(); it->Valid() && back <= keys.size(); it->Prev()) back++;
  if (forward_ok && it->status().ok() && back != keys.size()) abort();
  for (size_t i = 0; i < keys.size() && i < 16; i++) {
    it->Seek(keys[i]);
    if (forward_ok && it->status().ok() && (!it->Valid() || it->key().ToString() != keys[i])) abort();
    it->SeekForPrev(keys[i]);
  }
  return 0;
}
