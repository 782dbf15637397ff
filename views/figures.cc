#include "views/figures.h"

#include <cstdio>
#include <iterator>

namespace ckpt {
namespace {

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

std::string FormatBytes(int64_t bytes) {
  if (bytes <= 0) return "-";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace ckpt
