#include "store/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "store/data_dir.h"

namespace ckpt {

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  if (Status s = EnsureDataDir(data_dir); !s.ok()) return s;
  const std::string path = data_dir + "/LOCK";
  // Never through a symbolic link: truncating the link's target to write our pid would destroy
  // whatever file it points to.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    if (errno == ELOOP) {
      return Status::FailedPrecondition(path +
                                        " is a symbolic link; ckptd opens its store files "
                                        "only as themselves (remove the link)");
    }
    return Status::Unavailable("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::FailedPrecondition(path +
                                      " is not a regular file; refusing to use it as the lock");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {0};
    ssize_t n = ::pread(fd, holder, sizeof(holder) - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "unknown";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return Status::FailedPrecondition("data_dir " + data_dir + " is in use by another ckptd (pid " +
                                      pid + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only a hint for the error above; the lock itself is held.
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() { ::close(fd_); }

}  // namespace ckpt
