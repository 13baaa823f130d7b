// Batched reads: io_uring and pread paths against the file's bytes, with
// short reads, interrupts and errors injected through the fault hook.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "uih/io.h"

namespace {

class Io : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(1);
    content_.resize(300000);
    for (auto& c : content_) c = static_cast<char>(rng());
    path_ = dir_ / "f";
    int fd = open(path_.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(static_cast<ssize_t>(content_.size()), write(fd, content_.data(), content_.size()));
    close(fd);
    fd_ = open(path_.c_str(), O_RDONLY);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(UIH_OK, uih_io_create(8, GetParam(), &io_, nullptr));
    if (GetParam() && !uih_io_uses_uring(io_)) GTEST_SKIP() << "io_uring is not available here";
  }
  void TearDown() override {
    uih_io_free(io_);
    if (fd_ >= 0) close(fd_);
  }
  uih_test::TempDir dir_;
  std::string path_, content_;
  int fd_ = -1;
  uih_io* io_ = nullptr;
};

TEST_P(Io, BatchesReadExactlyTheFileBytes) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 30; round++) {
    size_t n = 1 + rng() % 40;  // more than the depth: several windows
    std::vector<uih_io_req> reqs(n);
    std::vector<std::string> bufs(n);
    for (size_t i = 0; i < n; i++) {
      uint64_t off = rng() % (content_.size() + 100);  // some past the end
      size_t len = rng() % 5 == 0 ? 0 : rng() % 70000;
      bufs[i].assign(len, '\0');
      reqs[i] = uih_io_req{fd_, off, len, &bufs[i][0], -999};
    }
    ASSERT_EQ(UIH_OK, uih_io_read(io_, reqs.data(), n, nullptr));
    for (size_t i = 0; i < n; i++) {
      size_t avail = reqs[i].offset >= content_.size() ? 0 : content_.size() - reqs[i].offset;
      size_t want = std::min(avail, reqs[i].len);
      ASSERT_EQ(static_cast<int64_t>(want), reqs[i].result) << "request " << i;
      ASSERT_EQ(0, memcmp(bufs[i].data(), content_.data() + std::min<size_t>(reqs[i].offset, content_.size()), want));
    }
  }
}

TEST_P(Io, BadDescriptorsFailPerRequest) {
  std::string a(100, '\0'), b(100, '\0');
  uih_io_req reqs[2] = {{fd_, 0, 100, &a[0], 0}, {-1, 0, 100, &b[0], 0}};
  ASSERT_EQ(UIH_OK, uih_io_read(io_, reqs, 2, nullptr));
  EXPECT_EQ(100, reqs[0].result);
  EXPECT_EQ(-EBADF, reqs[1].result);
}

// Faults through the process-wide hook, in the path under test: at most 7
// bytes per read and an interrupt every fifth call, or EIO from the first
// read of a given offset on.
struct Faults {
  int calls = 0;
  bool fail = false;
  uint64_t fail_at = 0;
  std::vector<uint64_t> offsets;  // every read the hook saw
};
int64_t Inject(void* ctx, int, uint64_t offset, const void*, int64_t res) {
  auto* f = static_cast<Faults*>(ctx);
  f->offsets.push_back(offset);
  if (f->fail) return offset >= f->fail_at ? -EIO : res;
  if (++f->calls % 5 == 0) return -EINTR;
  return res > 7 ? 7 : res;
}

// Installs the fault hook for one test, and removes it however the test ends.
struct FaultHook {
  explicit FaultHook(Faults* f) { uih_io_set_fault(Inject, f); }
  ~FaultHook() { uih_io_set_fault(nullptr, nullptr); }
};

TEST_P(Io, HookedShortReadsAndInterruptsAreCompleted) {
  Faults f;
  FaultHook hook(&f);
  std::vector<std::string> bufs(3, std::string(3000, '\0'));
  uih_io_req reqs[3] = {{fd_, 1000, 3000, &bufs[0][0], 0},
                        {fd_, 299000, 3000, &bufs[1][0], 0},  // 1000 bytes to the end
                        {fd_, 7, 3000, &bufs[2][0], 0}};
  ASSERT_EQ(UIH_OK, uih_io_read(io_, reqs, 3, nullptr));
  EXPECT_EQ(3000, reqs[0].result);
  EXPECT_EQ(content_.substr(1000, 3000), bufs[0]);
  EXPECT_EQ(1000, reqs[1].result);
  EXPECT_EQ(content_.substr(299000), bufs[1].substr(0, 1000));
  EXPECT_EQ(3000, reqs[2].result);
  EXPECT_EQ(content_.substr(7, 3000), bufs[2]);
  // 7,000 bytes at most 7 per read, and every fifth call interrupted: the
  // hook saw every piece.
  EXPECT_GE(f.offsets.size(), 7000u / 7 * 5 / 4);
}

TEST_P(Io, HookedErrorsFailOnlyTheirRequest) {
  Faults f;
  f.fail = true;
  f.fail_at = 200000;
  FaultHook hook(&f);
  std::string a(100, '\0'), b(100, '\0'), c(100, '\0');
  uih_io_req reqs[3] = {{fd_, 0, 100, &a[0], 0}, {fd_, 250000, 100, &b[0], 0}, {fd_, 100, 100, &c[0], 0}};
  ASSERT_EQ(UIH_OK, uih_io_read(io_, reqs, 3, nullptr));
  EXPECT_EQ(100, reqs[0].result);
  EXPECT_EQ(-EIO, reqs[1].result);
  EXPECT_EQ(100, reqs[2].result);
  EXPECT_EQ(content_.substr(100, 100), c);
}

INSTANTIATE_TEST_SUITE_P(Paths, Io, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Uring") : std::string("Pread");
                         });

}  // namespace
