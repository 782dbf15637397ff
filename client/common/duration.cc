#include "common/duration.h"

#include <cmath>

namespace ckpt::cli {
namespace {

std::optional<int64_t> Fail(std::string_view text, std::string_view why, std::string* error) {
  if (error) *error = "invalid duration \"" + std::string(text) + "\": " + std::string(why);
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> ParseDurationMs(std::string_view text, std::string* error,
                                       DurationOptions options) {
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
  if (!any_digit) {
    return Fail(text, "expected a non-negative number and a unit (ms, s, m or h), e.g. 30s", error);
  }
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
    if (!options.allow_bare_zero)
      return Fail(text, "needs a unit (ms, s, m or h), e.g. 10s", error);
    if (value != 0) return Fail(text, "missing unit (ms, s, m or h)", error);
    factor = 1;
  } else {
    return Fail(text, "unknown unit (use ms, s, m or h)", error);
  }
  const double millis = value * factor;
  if (millis > static_cast<double>(options.max_ms)) {
    return Fail(text, std::string("longer than ") + options.max_text, error);
  }
  return static_cast<int64_t>(std::llround(millis));
}

}  // namespace ckpt::cli
