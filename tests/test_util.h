// Small helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace uih_test {

// A fresh directory, removed with everything in it when the object dies.
// Lives under $UIH_TEST_TMPDIR (set by CTest to the build tree) or /tmp.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("UIH_TEST_TMPDIR");
    std::string root = base && *base ? base : "/tmp";
    std::filesystem::create_directories(root);
    std::string tmpl = root + "/uih-XXXXXX";
    char* made = mkdtemp(tmpl.data());
    if (made == nullptr) ADD_FAILURE() << "mkdtemp " << tmpl << " failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A file's bytes, and a file made of `text` (replaced).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// The largest write-ahead log (*.log) of the RocksDB database at `dir`
// ("" when it has none).
inline std::filesystem::path LargestLog(const std::filesystem::path& dir) {
  std::filesystem::path log;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".log" &&
        (log.empty() || std::filesystem::file_size(e.path()) > std::filesystem::file_size(log)))
      log = e.path();
  return log;
}

// The byte at `offset` of the file at `path`, its bits flipped by `mask`.
inline void FlipByte(const std::filesystem::path& path, uint64_t offset, unsigned char mask = 0x5a) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  char c = 0;
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(&c, 1);
  c = static_cast<char>(c ^ static_cast<char>(mask));
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

}  // namespace uih_test
