// The C API of uih/store.h: creating a store. Its shards' databases first,
// each with the schema and the format in one synced write, and their
// mutable tiers with the chunk span; the descriptor last, so that nothing
// is a store until it is whole.
#include <sys/random.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "uih_plugin/c_api.h"

namespace fs = std::filesystem;
using namespace rocksdb;

namespace {

int CreateShard(const std::string& path, const uih_schema* schema, const char* json, size_t len, uint64_t id,
                uih_error* err) {
  DBOptions dbo;
  dbo.create_if_missing = true;
  dbo.error_if_exists = true;
  uih::StrictRecovery(&dbo);
  uih::BoundPreallocation(&dbo);
  std::vector<ColumnFamilyDescriptor> cfs = {{kDefaultColumnFamilyName, ColumnFamilyOptions()}};
  std::vector<ColumnFamilyHandle*> handles;
  DB* db = nullptr;
  Status s = DB::Open(dbo, path, cfs, &handles, &db);
  if (!s.ok()) return uih::StatusError(err, path, s, "creating the shard's database");
  WriteOptions wo;
  wo.sync = true;
  WriteBatch wb;
  s = wb.Put(handles[0], uih::SchemaKey(uih_schema_version(schema)), Slice(json, len));
  if (s.ok()) s = wb.Put(handles[0], uih::kFormatKey, uih::U32Value(uih::kFormatOwnMutable));
  if (s.ok()) s = wb.Put(handles[0], uih::kStoreIdKey, uih::U64Value(id));
  if (s.ok()) s = db->Write(wo, &wb);
  for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  Status c = db->Close();
  delete db;
  if (s.ok()) s = c;
  return s.ok() ? UIH_OK : uih::StatusError(err, path, s, "writing the schema");
}

// A random store id: it names the store in the records logged against it.
int NewStoreId(uint64_t* id, uih_error* err) {
  *id = 0;
  while (*id == 0)
    if (getrandom(id, sizeof *id, 0) != static_cast<ssize_t>(sizeof *id))
      return uih_error_set(err, UIH_ERR_IO, "store_init: getrandom: %s", strerror(errno));
  return UIH_OK;
}

int Init(const char* dir, const char* json, size_t len, const char* origin, const uih_store_init_opts* opts,
         uih_error* err) {
  if (dir == nullptr || json == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: NULL argument");
  const uih_store_init_opts o = opts ? *opts : uih_store_init_opts UIH_STORE_INIT_OPTS_DEFAULT;
  const uint32_t shards = o.shards;
  if (o.chunk_span <= 0)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: chunk span %lld, expected > 0",
                         static_cast<long long>(o.chunk_span));
  if (shards < 1 || shards > UIH_STORE_SHARDS_MAX)
    return uih_error_set(err, UIH_ERR_OUT_OF_RANGE, "store_init: %u shards, expected 1..%d", shards,
                         UIH_STORE_SHARDS_MAX);
  uih_schema* schema = nullptr;
  int rc = uih_schema_parse(json, len, origin, &schema, err);
  if (rc != UIH_OK) return rc;
  std::unique_ptr<uih_schema, void (*)(uih_schema*)> own(schema, uih_schema_free);
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  bool existed = fs::exists(st);
  if (existed && !fs::is_directory(st))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_init: %s exists and is not a directory", dir);
  if (existed && !fs::is_empty(dir, ec))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "store_init: %s is not empty (a store is created in a new or empty directory)", dir);
  if (!existed && !fs::create_directories(dir, ec))
    return uih_error_set(err, UIH_ERR_IO, "store_init: creating %s: %s", dir, ec.message().c_str());
  const std::string root = dir;
  uint64_t id = 0;
  rc = NewStoreId(&id, err);
  for (uint32_t i = 0; i < shards && rc == UIH_OK; i++) {
    rc = CreateShard(root + "/" + uih::ShardName(i), schema, json, len, id, err);
    if (rc == UIH_OK) rc = uih::CreateStoreMutable(root + "/" + uih::MutableName(i), o.chunk_span, err);
  }
  std::string text(uih_store_descriptor_write(shards, id, nullptr, 0), '\0');
  uih_store_descriptor_write(shards, id, text.data(), text.size() + 1);
  if (rc == UIH_OK) rc = uih::WriteFileDurably(root, uih::kDescriptorFile, text, err);
  if (rc != UIH_OK) {  // leave the directory as it was found
    for (uint32_t i = 0; i < shards; i++) {
      fs::remove_all(root + "/" + uih::ShardName(i), ec);
      fs::remove_all(root + "/" + uih::MutableName(i), ec);
    }
    if (!existed) fs::remove(dir, ec);
  }
  return rc;
}

}  // namespace

extern "C" {

int uih_store_init(const char* dir, const char* schema_json, size_t len, const char* origin, uint32_t shards,
                   uih_error* err) {
  uih_store_init_opts o = UIH_STORE_INIT_OPTS_DEFAULT;
  o.shards = shards;
  return uih::CallC(err, "uih_store_init", [&] { return Init(dir, schema_json, len, origin, &o, err); });
}

int uih_store_create(const char* dir, const char* schema_json, size_t len, const char* origin,
                     const uih_store_init_opts* opts, uih_error* err) {
  return uih::CallC(err, "uih_store_create", [&] { return Init(dir, schema_json, len, origin, opts, err); });
}

}  // extern "C"
