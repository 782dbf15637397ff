#pragma once
// The process's own figures for the standard process_* metrics (resident and virtual memory, CPU
// seconds, open and allowed file descriptors, threads), read from /proc/self on each scrape.
//
// Threading: any thread; reads only the kernel's files. A figure /proc does not give (another
// OS, a restricted /proc) is left out of the page rather than reported as 0.

#include <cstdint>
#include <optional>
#include <string_view>

namespace ckpt {

struct ProcessStats {
  std::optional<double> cpu_seconds;  // user + system
  std::optional<uint64_t> resident_bytes;
  std::optional<uint64_t> virtual_bytes;
  std::optional<uint64_t> threads;
  std::optional<uint64_t> open_fds;
  std::optional<uint64_t> max_fds;  // the soft RLIMIT_NOFILE
};

ProcessStats ReadProcessStats();

// The fields of a /proc/<pid>/stat line (proc(5)): exposed for tests. Empty fields when the line
// does not parse.
ProcessStats ParseProcStat(std::string_view line, int64_t clock_ticks_per_second,
                           int64_t page_bytes);

}  // namespace ckpt
