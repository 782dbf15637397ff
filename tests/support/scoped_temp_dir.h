#pragma once
// ScopedTempDir: a fresh directory under the system's temp dir for one test, removed with all it
// holds when the test's fixture goes. A fixture holds one as a member instead of writing its own
// SetUp/TearDown pair.

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ckpt::testing {

class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& prefix = "ckptd-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    }
    path_ = pattern;
  }
  ~ScopedTempDir() {
    std::error_code ignored;  // a test that failed half-way may have left it half-removed
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ckpt::testing
