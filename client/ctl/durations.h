#pragma once
// Durations as ckptctl reads them ("250ms", "10s", "1.5m", "2h") and prints progress; the
// spellings it shares with the web view are in views/figures.h.

#include <cstdint>
#include <string>

#include "common/duration.h"
#include "views/figures.h"

namespace ckpt::ctl {

// How ckptctl parses a duration flag with cli::ParseDurationMs: a bare number, even "0", is
// rejected ("needs a unit"), as is anything over a year.
inline constexpr cli::DurationOptions kDurationOptions{
    .allow_bare_zero = false, .max_ms = 366LL * 24 * 3600 * 1000, .max_text = "a year"};

// A running time for progress displays: "0.4s", "12.3s", "2m05s", "1h02m".
std::string FormatElapsed(int64_t ms);

}  // namespace ckpt::ctl
