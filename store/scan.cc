// The C API of uih/store.h: scans of a whole generation, in key order, for
// the loader (RocksDB's iterator over the generation's column family, which
// merges a layered generation's layers: one sequential pass, read ahead,
// nothing cached; or seeks past what a layered load leaves alone).
#include <cstdlib>
#include <memory>
#include <string>

#include "store_internal.h"
#include "uih_plugin/c_api.h"

using namespace rocksdb;

namespace {

int ScanOpen(uih_store* s, uint32_t shard, uint32_t generation, uih_store_scan** out, uih_error* err) {
  uih::Shard* sh;
  int rc = uih::ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_open: NULL argument");
  auto sc = std::make_unique<uih_store_scan>();
  sc->gen = sh->Get(generation);
  if (generation != 0 && !sc->gen)
    return uih_error_set(err, UIH_ERR_NOT_FOUND, "store %s: shard %u has no live generation %u", s->dir.c_str(), shard,
                         generation);
  if (sc->gen) {
    ReadOptions ro;
    ro.fill_cache = false;
    ro.readahead_size = 4 << 20;  // a sequential pass
    sc->it.reset(sc->gen->db()->NewIterator(ro, sc->gen->cf()));
    sc->shard = &sh->path;
  }
  *out = sc.release();
  return UIH_OK;
}

int Current(uih_store_scan* sc, const uint8_t** key, size_t* klen, const uint8_t** value, size_t* vlen,
            uih_error* err);

int ScanNext(uih_store_scan* sc, const uint8_t** key, size_t* klen, const uint8_t** value, size_t* vlen,
             uih_error* err) {
  if (sc == nullptr || key == nullptr || klen == nullptr || value == nullptr || vlen == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_next: NULL argument");
  *key = nullptr;
  if (!sc->it) return UIH_OK;
  if (!sc->started) sc->it->SeekToFirst();
  else sc->it->Next();
  sc->started = true;
  return Current(sc, key, klen, value, vlen, err);
}

// The entry the scan's iterator is at, or *key NULL at the end.
int Current(uih_store_scan* sc, const uint8_t** key, size_t* klen, const uint8_t** value, size_t* vlen,
            uih_error* err) {
  if (!sc->it->Valid()) {
    Status st = sc->it->status();
    if (st.ok()) return UIH_OK;
    return uih::StatusError(err, *sc->shard, st, "scanning generation %u", sc->gen->number());
  }
  *key = uih::U8(sc->it->key());
  *klen = sc->it->key().size();
  *value = uih::U8(sc->it->value());
  *vlen = sc->it->value().size();
  return UIH_OK;
}

int ScanSeek(uih_store_scan* sc, const uint8_t* target, size_t target_len, const uint8_t** key, size_t* klen,
             const uint8_t** value, size_t* vlen, uih_error* err) {
  if (sc == nullptr || target == nullptr || key == nullptr || klen == nullptr || value == nullptr || vlen == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_seek: NULL argument");
  *key = nullptr;
  if (!sc->it) return UIH_OK;
  sc->it->Seek(uih::S(target, target_len));
  sc->started = true;
  return Current(sc, key, klen, value, vlen, err);
}

int ScanDicts(uih_store_scan* sc, const uint8_t** bytes, size_t* len, uih_error* err) {
  if (sc == nullptr || bytes == nullptr || len == nullptr)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_scan_dicts: NULL argument");
  if (!sc->dicts_made && sc->gen && sc->gen->dicts()) {  // derived from the parsed set: kept once
    uint8_t* p = nullptr;
    size_t n = 0;
    int rc = uih_stripe_context_serialize(sc->gen->dicts(), &p, &n, err);
    if (rc != UIH_OK) return rc;
    sc->dicts.assign(reinterpret_cast<const char*>(p), n);
    free(p);
  }
  sc->dicts_made = true;
  *bytes = reinterpret_cast<const uint8_t*>(sc->dicts.data());
  *len = sc->dicts.size();
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_store_scan_open(uih_store* s, uint32_t shard, uint32_t generation, uih_store_scan** out, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_open", [&] { return ScanOpen(s, shard, generation, out, err); });
}

int uih_store_scan_next(uih_store_scan* sc, const uint8_t** key, size_t* key_len, const uint8_t** value,
                        size_t* value_len, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_next", [&] { return ScanNext(sc, key, key_len, value, value_len, err); });
}

int uih_store_scan_seek(uih_store_scan* sc, const uint8_t* target, size_t target_len, const uint8_t** key,
                        size_t* key_len, const uint8_t** value, size_t* value_len, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_seek",
                    [&] { return ScanSeek(sc, target, target_len, key, key_len, value, value_len, err); });
}

int uih_store_scan_dicts(uih_store_scan* sc, const uint8_t** bytes, size_t* len, uih_error* err) {
  return uih::CallC(err, "uih_store_scan_dicts", [&] { return ScanDicts(sc, bytes, len, err); });
}

void uih_store_scan_close(uih_store_scan* sc) {
  uih::CallCVoid([&] { delete sc; });
}

}  // extern "C"
