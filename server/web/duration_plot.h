#pragma once
// The duration plot of a pipeline page: one bar per round of its history, oldest left, coloured
// by how it ended, drawn by the daemon as inline SVG (no script, nothing fetched from anywhere).
// Threading: pure functions.

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt {

struct PlotBar {
  int64_t checkpoint_id = 0;
  int64_t duration_ms = 0;  // trigger to finish; the pending round: its age so far
  std::string status;       // COMPLETED, FAILED, EXPIRED, ABORTED, PENDING (the bar's class)
  std::string kind;         // CHECKPOINT, SAVEPOINT, SAVEPOINT_AND_STOP
};

// `bars` oldest first. An <svg id="duration-plot"> element with a <rect class="bar STATUS"> and
// a <title> per bar, the y axis' top in time units; a short note when there is nothing to draw.
std::string DurationPlotSvg(const std::vector<PlotBar>& bars);

}  // namespace ckpt
