#pragma once
// Durations as ckptctl and ckpt-worker-sim take them (their --help): a non-negative number
// (decimals allowed) and one unit, "250ms", "10s", "1.5m", "2h".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt::cli {

// What one caller accepts beyond the common syntax.
struct DurationOptions {
  // "0" alone (zero needs no unit). Other unitless numbers are rejected either way: "missing unit"
  // when a bare zero is allowed, "needs a unit" when it is not.
  bool allow_bare_zero = false;
  // Longer is rejected as a typo with "longer than <max_text>".
  int64_t max_ms = 0;
  const char* max_text = "";
};

// Milliseconds, rounded; std::nullopt with a reason quoting the text in *error (if not null) for
// a negative, unitless, unknown-unit or too long value.
std::optional<int64_t> ParseDurationMs(std::string_view text, std::string* error,
                                       DurationOptions options);

}  // namespace ckpt::cli
