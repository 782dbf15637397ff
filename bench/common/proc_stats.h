#pragma once
// What the benchmarks read about a process from /proc: threads, resident memory, CPU time.
// Threading: stateless functions, safe from any thread.

#include <sys/types.h>

#include <cstdint>

namespace ckpt::bench {

struct ProcStatus {
  int threads = 0;     // /proc/<pid>/status Threads
  int64_t rss_kb = 0;  // /proc/<pid>/status VmRSS
};

// pid 0 = this process. Zeros when the file cannot be read.
ProcStatus ReadProcStatus(pid_t pid = 0);

// User + system CPU time of the process so far, in microseconds (from /proc/<pid>/stat).
int64_t ProcessCpuMicros(pid_t pid = 0);

}  // namespace ckpt::bench
