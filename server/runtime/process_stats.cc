#include "runtime/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ckpt {
namespace {

// Fields of /proc/<pid>/stat counted from 1 (proc(5)); `comm` (2) is in parentheses and may hold
// spaces, so fields are counted from the last ')'.
constexpr size_t kUtime = 14, kStime = 15, kNumThreads = 20, kVsize = 23, kRss = 24;

std::optional<uint64_t> ToNumber(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  uint64_t count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count > 0 ? count - 1 : 0;  // not the one opendir holds
}

}  // namespace

ProcessStats ParseProcStat(std::string_view line, int64_t clock_ticks_per_second,
                           int64_t page_bytes) {
  ProcessStats stats;
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos || clock_ticks_per_second <= 0 || page_bytes <= 0) {
    return stats;
  }
  // fields[0] is field 3 (state).
  std::vector<std::string_view> fields;
  std::string_view rest = line.substr(close + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  auto field = [&fields](size_t number) -> std::optional<uint64_t> {
    if (number < 3 || number - 3 >= fields.size()) return std::nullopt;
    return ToNumber(fields[number - 3]);
  };
  const auto utime = field(kUtime), stime = field(kStime);
  if (utime && stime) {
    stats.cpu_seconds = static_cast<double>(*utime + *stime) / clock_ticks_per_second;
  }
  stats.threads = field(kNumThreads);
  stats.virtual_bytes = field(kVsize);
  if (auto pages = field(kRss)) stats.resident_bytes = *pages * page_bytes;
  return stats;
}

ProcessStats ReadProcessStats() {
  std::ifstream file("/proc/self/stat");
  std::string line((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ProcessStats stats = ParseProcStat(line, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  stats.open_fds = CountOpenFds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    stats.max_fds = limit.rlim_cur;
  }
  return stats;
}

}  // namespace ckpt
