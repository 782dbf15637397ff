#pragma once
// Durations as CONTRACT.md writes them: a number and a unit, "250ms", "10s", "1.5m", "2h".

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt::sim {

// "0" alone is accepted too (zero needs no unit). Negative, unitless and absurd values (over ten
// years) are rejected with a reason in *error.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text, std::string* error);

}  // namespace ckpt::sim
