#include "common/credential_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ckpt::cli {
namespace {

std::nullopt_t Fail(const std::string& option, const std::string& path, const std::string& why,
                    std::string* error) {
  if (error) *error = option + " " + path + ": " + why;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ReadCredentialFile(const std::string& option, const std::string& path,
                                              std::string* error) {
  // Non-blocking: a FIFO put where the file was must not hang a worker while it reconnects.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int code = errno;
    if (code == ENOENT) return Fail(option, path, "no such file", error);
    return Fail(option, path, std::string("cannot read it: ") + std::strerror(code), error);
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Fail(option, path, std::string("cannot inspect it: ") + std::strerror(errno), error);
  }
  if (S_ISDIR(st.st_mode)) return Fail(option, path, "is a directory, not a file", error);
  if (!S_ISREG(st.st_mode)) {
    return Fail(option, path, "not a regular file (a FIFO, a device?)", error);
  }
  const auto too_big = [&] {
    return Fail(option, path,
                "larger than " + std::to_string(kMaxCredentialFileBytes >> 20) +
                    " MiB; that is not a credential file",
                error);
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxCredentialFileBytes) return too_big();
  std::string text;
  char buffer[16 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(option, path, std::string("cannot read it: ") + std::strerror(errno), error);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxCredentialFileBytes) return too_big();  // it grew while being read
  }
  return text;
}

}  // namespace ckpt::cli
