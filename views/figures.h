#pragma once
// Durations, times and sizes as ckptctl and the daemon's web view print them.

#include <cstdint>
#include <string>

namespace ckpt {

// An exact spelling, largest units first, zero parts left out: "0s", "250ms", "1.5s", "10s", "5m",
// "1h30m", "1m30.5s". Negative: a leading "-".
std::string FormatDuration(int64_t ms);

// How long ago `then_ms` was, both in ms since the Unix epoch: "just now" (under a second, or in
// the future by clock skew), "3s ago", "2m ago", "5h ago", "3d ago"; "never" when then_ms <= 0.
std::string FormatAgo(int64_t then_ms, int64_t now_ms);

// "512 B", "1.5 KiB", "3.0 GiB"; "-" for 0 (not reported).
std::string FormatBytes(int64_t bytes);

}  // namespace ckpt
