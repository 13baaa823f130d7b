// uih-sst: inspect UihTable files without preloading anything (Debian's
// sst_dump opens them only with libuih_rocksdb.so preloaded).
//   uih-sst props FILE          table properties and index size per key
//   uih-sst dump FILE [--hex] [--limit N]
//   uih-sst verify FILE         every checksum in the file
// Exit status: 0 ok, 1 the file is bad, 2 the command line is wrong.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table_properties.h"
#include "uih_plugin/table.h"

using namespace rocksdb;

namespace {

int Usage() {
  fprintf(stderr,
          "usage: uih-sst props FILE\n"
          "       uih-sst dump FILE [--hex] [--limit N]\n"
          "       uih-sst verify FILE\n");
  return 2;
}

int Fail(const std::string& file, const Status& s) {
  fprintf(stderr, "uih-sst: %s: %s\n", file.c_str(), s.ToString().c_str());
  return 1;
}

std::string Show(const Slice& s, bool hex) { return hex ? s.ToString(true) : s.ToString(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  std::string cmd = argv[1], file = argv[2];
  bool hex = false;
  long long limit = -1;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--hex")) hex = true;
    else if (!strcmp(argv[i], "--limit") && i + 1 < argc) limit = atoll(argv[++i]);
    else return Usage();
  }
  Options o;
  o.table_factory.reset(new uih::UihTableFactory());
  SstFileReader reader(o);
  Status s = reader.Open(file);
  if (!s.ok()) return Fail(file, s);

  if (cmd == "props") {
    auto p = reader.GetTableProperties();
    printf("%s", p->ToString("\n", ": ").c_str());
    printf("\nindex bytes per entry: %.2f\n",
           p->num_entries ? static_cast<double>(p->index_size) / static_cast<double>(p->num_entries) : 0.0);
    for (const auto& kv : p->user_collected_properties)
      printf("user property %s: %s\n", kv.first.c_str(), Slice(kv.second).ToString(true).c_str());
    return 0;
  }
  if (cmd == "verify") {
    s = reader.VerifyChecksum();
    if (!s.ok()) return Fail(file, s);
    printf("%s: ok (%llu entries)\n", file.c_str(),
           static_cast<unsigned long long>(reader.GetTableProperties()->num_entries));
    return 0;
  }
  if (cmd == "dump") {
    std::unique_ptr<Iterator> it(reader.NewIterator(ReadOptions()));
    long long n = 0;
    for (it->SeekToFirst(); it->Valid() && (limit < 0 || n < limit); it->Next(), n++)
      printf("%s => %s\n", Show(it->key(), hex).c_str(), Show(it->value(), hex).c_str());
    if (!it->status().ok()) return Fail(file, it->status());
    return 0;
  }
  return Usage();
}
