#pragma once
// Durations as ckptctl reads and prints them: "250ms", "10s", "1.5m", "2h"; and times relative to
// now ("3s ago", "never").

#include <cstdint>
#include <string>

#include "common/duration.h"

namespace ckpt::ctl {

// How ckptctl parses a duration flag with cli::ParseDurationMs: a bare number, even "0", is
// rejected ("needs a unit"), as is anything over a year.
inline constexpr cli::DurationOptions kDurationOptions{
    .allow_bare_zero = false, .max_ms = 366LL * 24 * 3600 * 1000, .max_text = "a year"};

// An exact spelling, largest units first, zero parts left out: "0s", "250ms", "1.5s", "10s", "5m",
// "1h30m", "1m30.5s". Negative: a leading "-".
std::string FormatDuration(int64_t ms);

// How long ago `then_ms` was, both in ms since the Unix epoch: "just now" (under a second, or in
// the future by clock skew), "3s ago", "2m ago", "5h ago", "3d ago"; "never" when then_ms <= 0.
std::string FormatAgo(int64_t then_ms, int64_t now_ms);

// A running time for progress displays: "0.4s", "12.3s", "2m05s", "1h02m".
std::string FormatElapsed(int64_t ms);

}  // namespace ckpt::ctl
