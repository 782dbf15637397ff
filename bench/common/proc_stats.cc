#include "common/proc_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace ckpt::bench {

namespace {

std::string ProcPath(pid_t pid, const char* file) {
  return pid == 0 ? std::string("/proc/self/") + file : "/proc/" + std::to_string(pid) + "/" + file;
}

}  // namespace

ProcStatus ReadProcStatus(pid_t pid) {
  ProcStatus status;
  std::ifstream in(ProcPath(pid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) status.threads = std::stoi(line.substr(8));
    if (line.rfind("VmRSS:", 0) == 0) status.rss_kb = std::stoll(line.substr(6));
  }
  return status;
}

int64_t ProcessCpuMicros(pid_t pid) {
  std::ifstream in(ProcPath(pid, "stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: fields are counted after the last
  // ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoll(field);
    if (i == 15) {
      stime = std::stoll(field);
      break;
    }
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  return (utime + stime) * 1'000'000 / (ticks > 0 ? ticks : 100);
}

}  // namespace ckpt::bench
