// Proves that cmake/RocksDBInternal.cmake compiles RocksDB's internal
// headers with the defines Debian compiled librocksdb.so with. Each check
// compares something our compile of the headers decides with what the
// library decides at run time.
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "port/port.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "table/block_based/block_based_table_factory.h"
#include "test_util/sync_point.h"
#include "test_util.h"
#include "util/compression.h"

#ifdef NDEBUG
#error "RocksDB internals must be compiled without NDEBUG, like Debian's librocksdb"
#endif
#ifdef ROCKSDB_LITE
#error "Debian's librocksdb is not a LITE build"
#endif

namespace {

using namespace rocksdb;

// Debian builds with build type None: asserts are on. The sync points that
// only exist without NDEBUG fire from inside the library's flush code.
TEST(RocksDBDefines, LibraryIsBuiltWithoutNDEBUG) {
  std::atomic<int> fired{0};
  SyncPoint::GetInstance()->SetCallBack("FlushJob::Start", [&](void*) { fired++; });
  SyncPoint::GetInstance()->EnableProcessing();
  uih_test::TempDir dir;
  Options o;
  o.create_if_missing = true;
  DB* db = nullptr;
  ASSERT_TRUE(DB::Open(o, dir.path(), &db).ok());
  ASSERT_TRUE(db->Put(WriteOptions(), "k", "v").ok());
  ASSERT_TRUE(db->Flush(FlushOptions()).ok());
  delete db;
  SyncPoint::GetInstance()->DisableProcessing();
  SyncPoint::GetInstance()->ClearAllCallBacks();
  EXPECT_GE(fired.load(), 1);
}

// port::Mutex has a debug-only `locked_` flag after the pthread mutex. The
// library's Lock() must write it inside the object as our headers size it,
// and nothing beyond.
TEST(RocksDBDefines, MutexLayoutMatchesTheLibrary) {
  ASSERT_EQ(sizeof(pthread_mutex_t) + alignof(port::Mutex), sizeof(port::Mutex));
  alignas(port::Mutex) unsigned char buf[sizeof(port::Mutex) + 32];
  std::memset(buf, 0xa5, sizeof buf);
  auto* mu = new (buf) port::Mutex();
  const unsigned char* locked = buf + sizeof(pthread_mutex_t);
  EXPECT_EQ(0, *locked);
  mu->Lock();
  EXPECT_EQ(1, *locked) << "the library did not set locked_ where our headers put it";
  mu->AssertHeld();
  mu->Unlock();
  EXPECT_EQ(0, *locked);
  mu->~Mutex();
  for (size_t i = sizeof(port::Mutex); i < sizeof buf; i++) ASSERT_EQ(0xa5, buf[i]) << i;
}

// RTTI is on in the library (no -fno-rtti): dynamic_cast across the
// boundary works on objects the library created.
TEST(RocksDBDefines, RttiWorksAcrossTheLibrary) {
  std::unique_ptr<TableFactory> f(NewBlockBasedTableFactory());
  EXPECT_NE(nullptr, dynamic_cast<BlockBasedTableFactory*>(f.get()));
}

// SNAPPY, ZLIB, BZIP2, LZ4, ZSTD: util/compression.h's inline checks (our
// defines) agree with the library's own list (its defines).
TEST(RocksDBDefines, CompressionSupportMatches) {
  std::vector<CompressionType> lib = GetSupportedCompressions();
  for (CompressionType t : {kSnappyCompression, kZlibCompression, kBZip2Compression,
                            kLZ4Compression, kLZ4HCCompression, kXpressCompression,
                            kZSTD}) {
    bool in_lib = std::find(lib.begin(), lib.end(), t) != lib.end();
    EXPECT_EQ(in_lib, CompressionTypeSupported(t)) << CompressionTypeToString(t);
  }
}

int FindUring(struct dl_phdr_info* info, size_t, void* found) {
  if (info->dlpi_name && std::strstr(info->dlpi_name, "liburing")) *static_cast<bool*>(found) = true;
  return 0;
}

// ROCKSDB_IOURING_PRESENT changes PosixRandomAccessFile's layout; Debian's
// library is built without liburing, so the define must be off too.
TEST(RocksDBDefines, IoUringPresenceMatches) {
  bool loaded = false;
  dl_iterate_phdr(FindUring, &loaded);
#ifdef ROCKSDB_IOURING_PRESENT
  EXPECT_TRUE(loaded) << "ROCKSDB_IOURING_PRESENT is defined but librocksdb does not use liburing";
#else
  EXPECT_FALSE(loaded) << "librocksdb uses liburing: define ROCKSDB_IOURING_PRESENT";
#endif
}

}  // namespace
