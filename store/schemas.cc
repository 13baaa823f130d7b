// A store's schema versions: the newest a shard holds, any version a record
// names (read once, kept until close), and a new version added for a load,
// which its first published generation writes.
#include <memory>
#include <string>

#include "store_internal.h"
#include "uih_plugin/c_api.h"

using namespace rocksdb;

namespace uih {

int ReadNewestSchema(Database* im, uint32_t* version, std::string* json, uih_error* err) {
  std::unique_ptr<Iterator> it(im->db->NewIterator(ReadOptions(), im->meta));
  *version = 0;
  const std::string prefix = kSchemaKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    int rc = ParseKeyU32(it->key(), kSchemaKeyPrefix, version, err);
    if (rc != UIH_OK) return UIH_PREFIXED(rc, err, "store %s: ", im->path.c_str());
    *json = it->value().ToString();
  }
  if (!it->status().ok()) return StatusError(err, im->path, it->status(), "reading the schema");
  if (*version == 0)
    return uih_corruption(err, "store %s: the shard holds no schema (key %s...)", im->path.c_str(), kSchemaKeyPrefix);
  return UIH_OK;
}

int SchemaAt(uih_store* s, uint32_t version, const uih_schema** out, uih_error* err) {
  std::lock_guard<std::mutex> lock(s->schemas_mu);
  auto it = s->schemas.find(version);
  if (it != s->schemas.end() && it->second.schema) {
    *out = it->second.schema;
    return UIH_OK;
  }
  for (auto& sh : s->shards) {
    if (!sh) continue;
    std::string json;
    std::shared_ptr<Database> im = sh->Db();
    Status st = im->db->Get(ReadOptions(), im->meta, SchemaKey(version), &json);
    if (st.IsNotFound()) continue;
    if (!st.ok()) return StatusError(err, sh->path, st, "reading schema version %u", version);
    std::string origin = sh->path + ": schema version " + std::to_string(version);
    uih_schema* schema = nullptr;
    int rc = uih_schema_parse(json.data(), json.size(), origin.c_str(), &schema, err);
    if (rc != UIH_OK) return rc;
    SchemaVersion& v = s->schemas[version];
    v.schema = schema;
    v.json = std::move(json);
    *out = schema;
    return UIH_OK;
  }
  return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: no shard holds schema version %u", s->dir.c_str(), version);
}

}  // namespace uih

namespace {

int SchemaAdd(uih_store* s, const char* json, size_t len, const char* origin, const uih_schema** out,
              uih_error* err) {
  if (s == nullptr || json == nullptr || out == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_schema_add: NULL argument");
  if (origin == nullptr) origin = "schema";
  uih_schema* parsed = nullptr;
  int rc = uih_schema_parse(json, len, origin, &parsed, err);
  if (rc != UIH_OK) return rc;
  std::unique_ptr<uih_schema, void (*)(uih_schema*)> own(parsed, uih_schema_free);
  uint32_t v = uih_schema_version(parsed);
  std::lock_guard<std::mutex> lock(s->schemas_mu);
  if (v < uih_schema_version(s->schema))
    return uih_error_set(err, UIH_ERR_INCOMPATIBLE,
                         "%s: schema version %u is older than the store's, version %u (a load writes with the "
                         "newest)",
                         origin, v, uih_schema_version(s->schema));
  auto it = s->schemas.find(v);
  if (it != s->schemas.end()) {
    if (it->second.json != std::string(json, len))
      return uih_error_set(err, UIH_ERR_INCOMPATIBLE,
                           "%s: the store already has a schema version %u, and it is not this text (a change "
                           "needs a new version)",
                           origin, v);
    *out = it->second.schema;
    return UIH_OK;
  }
  const uih::SchemaVersion& newest = s->schemas.rbegin()->second;
  rc = uih_schema_check_evolution(newest.schema, parsed, err);
  if (rc != UIH_OK)
    return UIH_PREFIXED(rc, err, "%s is no successor of the store's schema version %u: ", origin,
                            uih_schema_version(newest.schema));
  uih::SchemaVersion& added = s->schemas[v];
  added.json.assign(json, len);
  added.schema = own.release();
  *out = added.schema;
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_store_schema_add(uih_store* s, const char* json, size_t len, const char* origin, const uih_schema** out,
                         uih_error* err) {
  return uih::CallC(err, "uih_store_schema_add", [&] { return SchemaAdd(s, json, len, origin, out, err); });
}

}  // extern "C"
