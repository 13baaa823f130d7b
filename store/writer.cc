// The C API of uih/store.h: the writer that builds a shard's next
// generation — its stripes into table files in the store's tmp/, its value
// dictionaries, the users it erases — until publish.cc makes it current or
// it is aborted.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "store_internal.h"
#include "uih_plugin/c_api.h"

using namespace rocksdb;
namespace fs = std::filesystem;

uih_store_writer::~uih_store_writer() {
  file.reset();  // abandons an unfinished file
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (sh) {
    std::lock_guard<std::mutex> lock(sh->writer_mu);
    sh->writing = false;
  }
}

namespace uih {

int FinishFile(uih_store_writer* w, uih_error* err) {
  if (!w->file) return UIH_OK;
  Status st = w->file->Finish();
  w->file.reset();
  w->file_bytes = 0;
  return st.ok() ? UIH_OK : StatusError(err, w->files.back(), st, "finishing the table file");
}

}  // namespace uih

namespace {

int WriterOpen(uih_store* s, uint32_t shard, uih_store_writer** out, uih_error* err) {
  uih::Shard* sh;
  int rc = uih::ShardAt(s, shard, &sh, err);
  if (rc != UIH_OK) return rc;
  if (out == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_open: NULL argument");
  if (s->opts.read_only)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED, "store %s: opened read-only, it takes no new generation",
                         s->dir.c_str());
  if (s->opts.role == UIH_STORE_ROLE_SERVE)
    return uih_error_set(err, UIH_ERR_NOT_SUPPORTED,
                         "store %s: opened to serve (UIH_STORE_ROLE_SERVE), it takes no new generation: a load "
                         "opens the store to load (uih load, UIH_STORE_ROLE_LOAD) and this store follows it",
                         s->dir.c_str());
  {
    std::lock_guard<std::mutex> lock(sh->writer_mu);
    if (sh->writing)
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store %s: a load of shard %u is already running",
                           s->dir.c_str(), shard);
    sh->writing = true;
  }
  auto w = std::make_unique<uih_store_writer>();
  w->s = s;
  w->sh = sh;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    w->generation = std::max(sh->current, sh->gens.empty() ? 0u : sh->gens.rbegin()->first) + 1;
  }
  char name[64];
  snprintf(name, sizeof name, "/shard-%04u.gen-%08u", shard, w->generation);
  w->dir = s->tmp + name;
  std::error_code ec;
  fs::remove_all(w->dir, ec);
  if (!fs::create_directories(w->dir, ec))
    return uih_error_set(err, UIH_ERR_IO, "store %s: creating %s: %s", s->dir.c_str(), w->dir.c_str(),
                         ec.message().c_str());
  w->options = Options(DBOptions(), uih::GenerationCfOptions());
  *out = w.release();
  return UIH_OK;
}

// The table file entries go to: the one open, or a new one.
int OpenFile(uih_store_writer* w, uih_error* err) {
  if (w->file) return UIH_OK;
  char name[32];
  snprintf(name, sizeof name, "/%06zu.sst", w->files.size() + 1);
  w->files.push_back(w->dir + name);
  // The page cache keeps what is written (SstFileWriter drops it by
  // default): the generation is served as soon as it is published, and
  // its first snapshots would otherwise read the device.
  w->file = std::make_unique<SstFileWriter>(EnvOptions(), w->options, /*column_family=*/nullptr,
                                            /*invalidate_page_cache=*/false);
  Status st = w->file->Open(w->files.back());
  return st.ok() ? UIH_OK : uih::StatusError(err, w->files.back(), st, "creating a table file");
}

// A stripe (value) or, in a layered writer, a deletion (value NULL).
int WriterAdd(uih_store_writer* w, const uint8_t* key, size_t klen, const uint8_t* value, size_t vlen, bool deletion,
              uih_error* err) {
  const char* what = deletion ? "store_writer_delete" : "store_writer_add";
  if (w == nullptr || key == nullptr || (value == nullptr && vlen))
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "%s: NULL argument", what);
  if (deletion && !w->base)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "%s: generation %u is written whole: it has nothing below it to delete from", what,
                         w->generation);
  int rc = OpenFile(w, err);
  if (rc != UIH_OK) return rc;
  Status st = deletion ? w->file->Delete(uih::S(key, klen)) : w->file->Put(uih::S(key, klen), uih::S(value, vlen));
  if (!st.ok()) return uih::StatusError(err, w->files.back(), st, deletion ? "deleting a stripe" : "adding a stripe");
  w->file_bytes += klen + vlen;
  // A layer is one file: RocksDB gives a file of it that meets no stored
  // key a seqno and level of its own, a layer more for every read.
  if (!w->base && w->file_bytes >= w->s->opts.file_bytes) return uih::FinishFile(w, err);
  return UIH_OK;
}

int WriterLayer(uih_store_writer* w, uih_error* err) {
  if (w == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_layer: NULL writer");
  if (!w->files.empty())
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "store_writer_layer: generation %u has stripes already: a layer is chosen before the first",
                         w->generation);
  std::shared_ptr<uih::Generation> base = w->sh->Get(0);
  if (!base)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "store_writer_layer: shard %u has no generation to layer generation %u on", w->sh->index,
                         w->generation);
  const size_t layers = base->Layers().size();
  if (layers >= uih::kLayersMax)
    return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT,
                         "store_writer_layer: generation %u of shard %u has %zu layers, the most a generation has: "
                         "write generation %u whole",
                         base->number(), w->sh->index, layers, w->generation);
  w->base = std::move(base);
  return UIH_OK;
}

}  // namespace

extern "C" {

int uih_store_writer_open(uih_store* s, uint32_t shard, uih_store_writer** out, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_open", [&] { return WriterOpen(s, shard, out, err); });
}

uint32_t uih_store_writer_generation(const uih_store_writer* w) { return w ? w->generation : 0; }

int uih_store_writer_add(uih_store_writer* w, const uint8_t* key, size_t key_len, const uint8_t* value,
                         size_t value_len, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_add",
                    [&] { return WriterAdd(w, key, key_len, value, value_len, /*deletion=*/false, err); });
}

int uih_store_writer_delete(uih_store_writer* w, const uint8_t* key, size_t key_len, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_delete",
                    [&] { return WriterAdd(w, key, key_len, nullptr, 0, /*deletion=*/true, err); });
}

int uih_store_writer_layer(uih_store_writer* w, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_layer", [&] { return WriterLayer(w, err); });
}

int uih_store_writer_finish(uih_store_writer* w, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_finish", [&] {
    if (w == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_finish: NULL argument");
    return uih::FinishFile(w, err);
  });
}

int uih_store_writer_set_dicts(uih_store_writer* w, const uint8_t* bytes, size_t len, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_set_dicts", [&]() -> int {
    if (w == nullptr || (bytes == nullptr && len))
      return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_set_dicts: NULL argument");
    w->dicts.assign(reinterpret_cast<const char*>(bytes), len);  // parsed by the publish, before it writes
    return UIH_OK;
  });
}

int uih_store_writer_erase_user(uih_store_writer* w, uint64_t user_id, uih_error* err) {
  return uih::CallC(err, "uih_store_writer_erase_user", [&] {
    if (w == nullptr) return uih_error_set(err, UIH_ERR_INVALID_ARGUMENT, "store_writer_erase_user: NULL writer");
    w->erased_users.push_back(user_id);
    return static_cast<int>(UIH_OK);
  });
}

void uih_store_writer_abort(uih_store_writer* w) {
  uih::CallCVoid([&] { delete w; });
}

}  // extern "C"
