#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ckpt {

Status LowerCallingThreadNice(int nice) {
  const auto thread = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;  // -1 is a valid nice value: only errno tells a failure
  const int current = getpriority(PRIO_PROCESS, thread);
  if (errno == 0 && current <= nice) return Status::Ok();
  if (setpriority(PRIO_PROCESS, thread, nice) == 0) return Status::Ok();
  const int error = errno;
  const std::string why = "nice " + std::to_string(nice) + ": " + std::strerror(error);
  if (error == EACCES || error == EPERM) return Status::PermissionDenied(why);
  return Status::Internal(why);
}

}  // namespace ckpt
