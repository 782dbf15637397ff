#pragma once
// The start offset (docs/PROTOCOL.md, the paragraph on it): pipelines and alignment groups whose
// workers connect together (a fleet starting, a daemon restarted or taken over, a job resumed)
// would trigger together and stay together, since each interval counts from the actual trigger.
// So an overdue one holds its first periodic trigger for a fixed fraction of min(spread,
// interval): the fraction of its start slot, the order the daemon made it in, or else of its key.
//
// Threading: pure functions.

#include <chrono>
#include <cstdint>
#include <optional>

#include "core/types.h"

namespace ckpt {

// Slot i at the fractional part of i times the golden ratio, in [0, 1): any N consecutive slots,
// from any first one, leave no tenth of [0, 1) with more than about N / 10 + 2 of them (a job's
// pipelines, made one after another, are spread as evenly as the daemon's).
double StartSlotFraction(uint64_t slot);
// By the key instead: the same in every run, spread evenly only on average.
double StartKeyFraction(const PipelineKey& key);
// `fraction` of min(spread, interval), of the interval when `spread` is nullopt.
std::chrono::microseconds StartOffset(double fraction, std::optional<Millis> spread,
                                      int64_t interval_ms);

// The hold a schedule takes at `now` (its tasks or members just became all ready, or it was
// resumed): now plus its offset, or nullopt to keep what it has. A hold not yet over stays (a
// worker in a crash loop must not push the trigger out each time), and a schedule not yet due
// (one interval after `last_trigger`) keeps its due time: only the overdue are spread.
std::optional<SteadyTime> NewStartHold(SteadyTime now, std::optional<SteadyTime> hold,
                                       std::optional<SteadyTime> last_trigger, int64_t interval_ms,
                                       double fraction, std::optional<Millis> spread);

}  // namespace ckpt
