#include "ctl/durations.h"

#include <cmath>
#include <cstdio>

namespace ckpt::ctl {
namespace {

constexpr double kMaxMillis = 366.0 * 24 * 3600 * 1000;  // a year: longer is a typo

std::optional<int64_t> Fail(std::string_view text, const char* why, std::string* error) {
  if (error) *error = "invalid duration \"" + std::string(text) + "\": " + why;
  return std::nullopt;
}

// "1.500" -> "1.5", "2.000" -> "2".
std::string TrimmedDecimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  std::string text = buffer;
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::optional<int64_t> ParseDurationMs(std::string_view text, std::string* error) {
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
    return Fail(text, "needs a unit (ms, s, m or h), e.g. 10s", error);
  } else {
    return Fail(text, "unknown unit (use ms, s, m or h)", error);
  }
  const double millis = value * factor;
  if (millis > kMaxMillis) return Fail(text, "longer than a year", error);
  return static_cast<int64_t>(std::llround(millis));
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) return "-" + FormatDuration(-ms);
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  const int64_t hours = ms / 3'600'000;
  const int64_t minutes = ms % 3'600'000 / 60'000;
  const int64_t rest_ms = ms % 60'000;  // seconds and milliseconds
  std::string text;
  if (hours > 0) text += std::to_string(hours) + "h";
  if (minutes > 0) text += std::to_string(minutes) + "m";
  if (rest_ms > 0) {
    text += rest_ms % 1000 == 0 ? std::to_string(rest_ms / 1000)
                                : TrimmedDecimal(static_cast<double>(rest_ms) / 1000.0);
    text += "s";
  }
  return text;
}

std::string FormatAgo(int64_t then_ms, int64_t now_ms) {
  if (then_ms <= 0) return "never";
  const int64_t ago = now_ms - then_ms;
  if (ago < 1000) return "just now";
  if (ago < 60'000) return std::to_string(ago / 1000) + "s ago";
  if (ago < 3'600'000) return std::to_string(ago / 60'000) + "m ago";
  if (ago < 48 * 3'600'000LL) return std::to_string(ago / 3'600'000) + "h ago";
  return std::to_string(ago / (24 * 3'600'000LL)) + "d ago";
}

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
