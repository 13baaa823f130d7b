// Batched reads: io_uring and pread paths against the file's bytes, with
// short reads and errors injected into the pread path.
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

INSTANTIATE_TEST_SUITE_P(Paths, Io, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Uring") : std::string("Pread");
                         });

int calls;
ssize_t ShortPread(int fd, void* buf, size_t len, off_t off) {  // at most 7 bytes, EINTR now and then
  if (++calls % 5 == 0) {
    errno = EINTR;
    return -1;
  }
  return pread(fd, buf, len < 7 ? len : 7, off);
}
ssize_t FailingPread(int, void*, size_t, off_t) {
  errno = EIO;
  return -1;
}

TEST(IoFaults, ShortReadsAndInterruptsAreCompleted) {
  uih_test::TempDir dir;
  std::string path = dir / "f", content(5000, 'x');
  for (size_t i = 0; i < content.size(); i++) content[i] = static_cast<char>(i * 31);
  int fd = open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  ASSERT_EQ(static_cast<ssize_t>(content.size()), write(fd, content.data(), content.size()));
  uih_io* io = nullptr;
  ASSERT_EQ(UIH_OK, uih_io_create(4, 0, &io, nullptr));
  uih_io_set_pread(io, ShortPread);
  std::string buf(3000, '\0');
  uih_io_req req{fd, 1000, 3000, &buf[0], 0};
  ASSERT_EQ(UIH_OK, uih_io_read(io, &req, 1, nullptr));
  EXPECT_EQ(3000, req.result);
  EXPECT_EQ(content.substr(1000, 3000), buf);
  uih_io_set_pread(io, FailingPread);
  ASSERT_EQ(UIH_OK, uih_io_read(io, &req, 1, nullptr));
  EXPECT_EQ(-EIO, req.result);
  uih_io_free(io);
  close(fd);
}

}  // namespace
