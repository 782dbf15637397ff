#pragma once
// DataDirLock keeps a second daemon off a data_dir in use: two writers would hand out the same
// checkpoint ids. An flock on <data_dir>/LOCK, released by the kernel when the process dies (so a
// kill -9 leaves nothing stale behind).
// Threading: constructed and destroyed by the controlling thread; no other use.

#include <memory>
#include <string>

#include "common/status.h"

namespace ckpt {

class DataDirLock {
 public:
  // FAILED_PRECONDITION when another process holds it; the error names the holder's pid.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace ckpt
