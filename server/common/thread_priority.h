#pragma once
// The scheduling priority (nice value) of the calling thread. On Linux a nice value belongs to a
// thread, not to the process: setting it here leaves the daemon's other threads as they are.

#include "common/status.h"

namespace ckpt {

// Sets the calling thread's nice value (-20 highest .. 19 lowest). Lowering it below what the
// thread has needs CAP_SYS_NICE or an RLIMIT_NICE that allows it (systemd's LimitNICE=); without
// either it fails with PERMISSION_DENIED and the thread keeps its priority.
Status SetCallingThreadNice(int nice);

}  // namespace ckpt
