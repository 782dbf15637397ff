#include "store/data_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

namespace ckpt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStoreIdFile = "STORE_ID";
constexpr size_t kStoreIdLength = 32;

std::string Errno(const std::string& what, int error) { return what + ": " + std::strerror(error); }

bool IsStoreId(const std::string& text) {
  if (text.size() != kStoreIdLength) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Status EnsureDataDir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    const fs::path parent = fs::path(dir).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec)
      return Status::FailedPrecondition("cannot create data_dir " + dir + ": " + ec.message());
    if (::mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) {
      return Status::FailedPrecondition(Errno("cannot create data_dir " + dir, errno));
    }
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::FailedPrecondition("data_dir " + dir + " is not a directory");
  }
  return Status::Ok();
}

Status RefuseSymlink(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::FailedPrecondition(Errno("cannot inspect " + path, errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return Status::FailedPrecondition(
        path +
        " is a symbolic link; ckptd opens its store files only as themselves (replace the "
        "link with the file it points to, or remove it)");
  }
  return Status::Ok();
}

Status CreateFileIfMissing(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd >= 0) {
    ::close(fd);
    return Status::Ok();
  }
  if (errno == EEXIST) return RefuseSymlink(path);
  return Status::FailedPrecondition(Errno("cannot create " + path, errno));
}

std::string NewStoreId() {
  std::random_device random;  // /dev/urandom
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  while (id.size() < kStoreIdLength) {
    uint32_t bits = random();
    for (int i = 0; i < 8 && id.size() < kStoreIdLength; ++i, bits >>= 4) id += kHex[bits & 0xf];
  }
  return id;
}

Result<std::optional<std::string>> ReadStoreId(const std::string& dir) {
  const std::string path = dir + "/" + kStoreIdFile;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Status::DataLoss(Errno("cannot read " + path, errno));
  }
  char buffer[kStoreIdLength + 2] = {};
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  ::close(fd);
  std::string text(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (!IsStoreId(text)) {
    return Status::DataLoss(path + " does not hold a store id (" + std::to_string(kStoreIdLength) +
                            " hex digits); refusing to guess which store this data_dir held");
  }
  return std::optional<std::string>(text);
}

Status WriteStoreId(const std::string& dir, const std::string& id) {
  const std::string path = dir + "/" + kStoreIdFile;
  const std::string temp = path + ".tmp";
  ::unlink(temp.c_str());  // a leftover of a crash; never followed (unlink removes the link)
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0) return Status::Unavailable(Errno("cannot write " + temp, errno));
  const std::string text = id + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = written && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!synced) {
    ::unlink(temp.c_str());
    return Status::Unavailable(Errno("cannot write " + temp, error));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    ::unlink(temp.c_str());
    return Status::Unavailable(Errno("cannot rename " + temp + " to " + path, rename_error));
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::Ok();
}

}  // namespace ckpt
