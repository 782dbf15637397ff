#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ckpt {

Status SetCallingThreadNice(int nice) {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) == 0)
    return Status::Ok();
  const int error = errno;
  const std::string why = "nice " + std::to_string(nice) + ": " + std::strerror(error);
  if (error == EACCES || error == EPERM) return Status(StatusCode::kPermissionDenied, why);
  return Status::Internal(why);
}

}  // namespace ckpt
