// Moving the mutable tier of a shard of format 1 or 2 out of the shard's
// database into mutable-%04u/ (format.h, format 3): so that a serving
// process and a loading one each lock a database of their own.
//
// The steps, each safe to be killed after: (1) a mutable-%04u/ left by a
// move that did not commit is removed; (2) the new database gets every
// (key, event list) of the shard's uih.mutable, as merged, its watermark,
// chunk span and uih.applied (the current generation: an older shard's
// publishes erased from its mutable tier themselves; the watermark caught
// up with its through), synced, and the store's directory synced so the
// new folder's name is durable (SyncDirectory); (3) the commit: uih.format 3 written to
// the shard with its watermark and chunk span deleted, in one synced
// write; (4) the shard's uih.mutable dropped (an open of a format-3 shard
// drops one left behind, so a failure here fails nothing).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/write_batch.h"
#include "store_internal.h"
#include "uih_plugin/logger.h"

using namespace rocksdb;
namespace fs = std::filesystem;

namespace {

using uih::Shard;
using uih::StatusError;

// The shard's database, writable, with its mutable tier's merge operator.
struct Opened {
  DB* db = nullptr;
  std::vector<ColumnFamilyHandle*> handles;
  ColumnFamilyHandle* meta = nullptr;
  ColumnFamilyHandle* events = nullptr;
  ~Opened() {
    if (db == nullptr) return;
    if (meta) uih::FlushOut(db, {meta}).PermitUncheckedError();  // the commit out of the write-ahead log
    for (ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db->Close().PermitUncheckedError();
    delete db;
  }
};

int OpenWritable(uih_store* s, Shard* sh, Opened* o, uih_error* err) {
  DBOptions dbo;
  dbo.info_log = std::make_shared<uih::LogFile>(sh->path);
  uih::StrictRecovery(&dbo);
  uih::BoundPreallocation(&dbo);
  std::vector<std::string> names;
  Status st = DB::ListColumnFamilies(dbo, sh->path, &names);
  if (!st.ok()) return StatusError(err, sh->path, st, "opening shard %u to move its mutable tier", sh->index);
  std::vector<ColumnFamilyDescriptor> cfs;
  for (const std::string& name : names) cfs.emplace_back(name, uih::ShardCfOptions(s, name));
  int rc = uih::CheckTableProperties(sh->path, err);
  std::string torn;  // said again by the open that follows the move
  if (rc == UIH_OK) rc = uih::CheckWriteAheadLogs(sh->path, dbo, &torn, err);
  if (rc != UIH_OK) return rc;
  st = DB::Open(dbo, sh->path, cfs, &o->handles, &o->db);
  if (!st.ok())
    return StatusError(err, sh->path, st,
                       "opening shard %u writable, once, to move its mutable tier into %s (format 3)", sh->index,
                       uih::MutableName(sh->index).c_str());
  for (ColumnFamilyHandle* h : o->handles) {
    if (h->GetName() == kDefaultColumnFamilyName) o->meta = h;
    if (h->GetName() == UIH_MUTABLE_CF) o->events = h;
  }
  return UIH_OK;
}

// Step 2: the new database, whole and synced.
int CopyInto(Shard* sh, const Opened& o, uint32_t format, uih_error* err) {
  int64_t wm = 0, span = 0;
  uint32_t current = 0;
  bool has_wm = false, has_span = false, found;
  int rc = uih::ReadMetaI64(o.db, o.meta, sh->path, format, uih::kWatermarkKey, &wm, &has_wm, err);
  if (rc == UIH_OK) rc = uih::ReadMetaI64(o.db, o.meta, sh->path, format, uih::kChunkSpanKey, &span, &has_span, err);
  if (rc == UIH_OK) rc = uih::ReadMetaU32(o.db, o.meta, sh->path, uih::kCurrentKey, &current, &found, err);
  std::string record;
  if (rc == UIH_OK && current != 0)  // a load killed before its watermark caught up: it catches up here
    rc = uih::GetMeta(o.db, o.meta, sh->path, uih::GenerationKey(current), "the current generation's record", &record,
                      &found, err);
  if (rc == UIH_OK && current != 0) {
    uih_generation g;
    rc = uih_generation_decode(reinterpret_cast<const uint8_t*>(record.data()), record.size(), &g, err);
    if (rc == UIH_OK && (!has_wm || wm < g.through)) wm = g.through, has_wm = true;
    if (rc != UIH_OK) rc = UIH_PREFIXED(rc, err, "store %s: generation %u: ", sh->path.c_str(), current);
  }
  if (rc != UIH_OK) return rc;
  uih_mutable_opts mo = UIH_MUTABLE_OPTS_DEFAULT;
  mo.create_if_missing = 1;
  mo.chunk_span = has_span ? span : 1;  // a store made before chunks: the key is deleted below
  uih_mutable* m = nullptr;
  rc = uih::OpenStoreMutable(sh->mutable_path, mo, &m, err);
  if (rc != UIH_OK) return rc;
  std::unique_ptr<uih_mutable, void (*)(uih_mutable*)> own(m, uih::FreeMutable);
  DB* to = uih::MutableDB(m);
  ColumnFamilyHandle* events = uih::MutableColumnFamily(m);
  std::unique_ptr<Iterator> it(o.db->NewIterator(ReadOptions(), o.events));
  WriteBatch wb;
  Status st;
  for (it->SeekToFirst(); st.ok() && it->Valid(); it->Next()) {
    st = wb.Put(events, it->key(), it->value());
    if (st.ok() && wb.GetDataSize() >= (4u << 20)) {
      st = to->Write(WriteOptions(), &wb);
      wb.Clear();
    }
  }
  if (st.ok()) st = it->status();
  ColumnFamilyHandle* meta = to->DefaultColumnFamily();
  if (st.ok() && has_wm) st = wb.Put(meta, uih::kWatermarkKey, uih::I64Value(wm));
  if (st.ok() && !has_span) st = wb.Delete(meta, uih::kChunkSpanKey);
  if (st.ok()) st = wb.Put(meta, uih::kAppliedKey, uih::U32Value(current));
  WriteOptions wo;
  wo.sync = true;  // and with it every write before
  if (st.ok()) st = to->Write(wo, &wb);
  if (!st.ok()) return StatusError(err, sh->mutable_path, st, "copying shard %u's mutable tier", sh->index);
  return UIH_OK;
}

}  // namespace

namespace uih {

int MoveMutable(uih_store* s, Shard* sh, uih_error* err) {
  Opened o;
  int rc = OpenWritable(s, sh, &o, err);
  if (rc != UIH_OK) return rc;
  uint32_t format = 1;
  bool found;
  rc = ReadMetaU32(o.db, o.meta, sh->path, kFormatKey, &format, &found, err);
  if (rc != UIH_OK || format >= kFormatOwnMutable) return rc;  // moved meanwhile by another open
  if (o.events == nullptr)
    return uih_corruption(err, "store %s: the shard (format %u) has no column family %s", sh->path.c_str(), format,
                          UIH_MUTABLE_CF);
  std::error_code ec;
  fs::remove_all(sh->mutable_path, ec);  // step 1
  if (ec)
    return uih_error_set(err, UIH_ERR_IO, "store %s: removing %s, left by a move that did not finish: %s",
                         s->dir.c_str(), sh->mutable_path.c_str(), ec.message().c_str());
  rc = CopyInto(sh, o, format, err);
  if (rc == UIH_OK) rc = SyncDirectory(s->dir, err);  // the new folder's name, durable before the commit
  if (rc != UIH_OK) return rc;
  WriteBatch wb;  // step 3
  Status st = wb.Put(o.meta, kFormatKey, U32Value(kFormatOwnMutable));
  if (st.ok()) st = wb.Delete(o.meta, kWatermarkKey);
  if (st.ok()) st = wb.Delete(o.meta, kChunkSpanKey);
  WriteOptions wo;
  wo.sync = true;
  if (st.ok()) st = o.db->Write(wo, &wb);
  if (!st.ok()) return StatusError(err, sh->path, st, "writing format %u", kFormatOwnMutable);
  o.db->DropColumnFamily(o.events).PermitUncheckedError();  // step 4: the next open drops it, failing here
  return UIH_OK;
}

}  // namespace uih
