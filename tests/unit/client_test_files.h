#pragma once
// A scratch directory for the clients' unit tests of credential files: made under gtest's TempDir,
// removed with everything in it at the end of the test.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace ckpt::client_test {

class ScratchDir {
 public:
  ScratchDir() {
    std::string base = ::testing::TempDir();
    if (!base.empty() && base.back() == '/') base.pop_back();
    std::string pattern = base + "/ckpt-client-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `text` to <dir>/<name> (replacing it) and returns the file's path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    return file;
  }

 private:
  std::string path_;
};

}  // namespace ckpt::client_test
