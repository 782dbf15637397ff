#include "ctl/durations.h"

#include <cstdio>

namespace ckpt::ctl {

std::string FormatElapsed(int64_t ms) {
  if (ms < 0) ms = 0;
  char buffer[48];
  if (ms < 60'000) {
    std::snprintf(buffer, sizeof buffer, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else if (ms < 3'600'000) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(ms / 60'000),
                  static_cast<long long>(ms % 60'000 / 1000));
  } else {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", static_cast<long long>(ms / 3'600'000),
                  static_cast<long long>(ms % 3'600'000 / 60'000));
  }
  return buffer;
}

}  // namespace ckpt::ctl
