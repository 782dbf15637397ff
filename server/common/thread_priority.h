#pragma once
// The scheduling priority (nice value) of the calling thread. On Linux a nice value belongs to a
// thread, not to the process: setting it here leaves the daemon's other threads as they are.

#include "common/status.h"

namespace ckpt {

// Lowers the calling thread's nice value (-20 highest .. 19 lowest) to `nice`; a thread already
// at it or below is left as it is (a daemon started with a lower Nice= keeps it). Lowering needs
// CAP_SYS_NICE or an RLIMIT_NICE that allows it (systemd's LimitNICE=); without either it fails
// with PERMISSION_DENIED and the thread keeps its priority.
//
// A nice value ranks threads within one scheduling group (a cgroup with the cpu controller, or a
// session's autogroup): under systemd the thread is ranked ahead of its own daemon's threads,
// while other services compete by their groups' weights (CPUWeight=). Threads the thread starts
// inherit the value.
Status LowerCallingThreadNice(int nice);

}  // namespace ckpt
