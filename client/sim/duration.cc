#include "sim/duration.h"

#include <cmath>
#include <cstdint>

namespace ckpt::sim {
namespace {

constexpr double kMaxMillis = 10.0 * 365 * 24 * 3600 * 1000;  // ten years

std::optional<std::chrono::milliseconds> Fail(std::string_view text, const char* why,
                                              std::string* error) {
  if (error) *error = "invalid duration \"" + std::string(text) + "\": " + why;
  return std::nullopt;
}

}  // namespace

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text, std::string* error) {
  size_t pos = 0;
  double value = 0;
  bool any_digit = false;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    value = value * 10 + (text[pos] - '0');
    any_digit = true;
    ++pos;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    double scale = 0.1;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      value += (text[pos] - '0') * scale;
      scale /= 10;
      any_digit = true;
      ++pos;
    }
  }
  if (!any_digit)
    return Fail(text, "expected a non-negative number and a unit (ms, s, m, h), e.g. 30s", error);
  const std::string_view unit = text.substr(pos);
  double factor = 0;
  if (unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else if (unit.empty()) {
    if (value != 0) return Fail(text, "missing unit (ms, s, m or h)", error);
    factor = 1;
  } else {
    return Fail(text, "unknown unit (use ms, s, m or h)", error);
  }
  const double millis = value * factor;
  if (millis > kMaxMillis) return Fail(text, "longer than ten years", error);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(millis)));
}

}  // namespace ckpt::sim
