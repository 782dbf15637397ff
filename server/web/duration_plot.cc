#include "web/duration_plot.h"

#include <algorithm>
#include <cstdio>

#include "core/explanation.h"
#include "web/escape.h"

namespace ckpt {

namespace {

constexpr int kWidth = 720;
constexpr int kHeight = 200;
constexpr int kLeft = 56;  // room for the y axis' labels
constexpr int kRight = 8;
constexpr int kTop = 12;
constexpr int kBottom = 28;  // room for the x axis' labels

// The axis' top: 1, 2 or 5 times a power of ten ms, at or above `max_ms`.
int64_t NiceCeiling(int64_t max_ms) {
  int64_t step = 1;
  while (true) {
    for (int64_t m : {1, 2, 5}) {
      if (m * step >= max_ms) return m * step;
    }
    step *= 10;
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

}  // namespace

std::string DurationPlotSvg(const std::vector<PlotBar>& bars) {
  if (bars.empty()) {
    return "<p class=\"note\" id=\"duration-plot-empty\">No rounds to plot yet.</p>";
  }
  int64_t max_ms = 1;
  for (const auto& b : bars) max_ms = std::max(max_ms, b.duration_ms);
  const int64_t top_ms = NiceCeiling(max_ms);
  const int plot_w = kWidth - kLeft - kRight;
  const int plot_h = kHeight - kTop - kBottom;
  const double slot = static_cast<double>(plot_w) / static_cast<double>(bars.size());
  const double bar_w = std::clamp(slot * 0.7, 1.0, 40.0);  // a lone bar stays a bar

  std::string svg =
      "<svg id=\"duration-plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
      std::to_string(kWidth) + " " + std::to_string(kHeight) +
      "\" role=\"img\" aria-label=\"checkpoint durations\">";
  // Axes and the top and bottom of the scale.
  const std::string x0 = std::to_string(kLeft);
  const std::string y0 = std::to_string(kTop + plot_h);
  svg += "<line class=\"axis\" x1=\"" + x0 + "\" y1=\"" + std::to_string(kTop) + "\" x2=\"" + x0 +
         "\" y2=\"" + y0 + "\"/>";
  svg += "<line class=\"axis\" x1=\"" + x0 + "\" y1=\"" + y0 + "\" x2=\"" +
         std::to_string(kLeft + plot_w) + "\" y2=\"" + y0 + "\"/>";
  svg += "<text class=\"label\" x=\"" + std::to_string(kLeft - 4) + "\" y=\"" +
         std::to_string(kTop + 4) + "\" text-anchor=\"end\">" + ShortDuration(top_ms) + "</text>";
  svg += "<text class=\"label\" x=\"" + std::to_string(kLeft - 4) + "\" y=\"" + y0 +
         "\" text-anchor=\"end\">0</text>";
  for (size_t i = 0; i < bars.size(); ++i) {
    const PlotBar& b = bars[i];
    const double h = static_cast<double>(plot_h) *
                     static_cast<double>(std::max<int64_t>(0, b.duration_ms)) /
                     static_cast<double>(top_ms);
    const double x = kLeft + slot * static_cast<double>(i) + (slot - bar_w) / 2;
    char geometry[128];
    std::snprintf(geometry, sizeof geometry, "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"",
                  x, kTop + plot_h - std::max(h, 1.0), bar_w, std::max(h, 1.0));
    svg += "<rect class=\"bar " + HtmlEscape(Lower(b.status)) + "\" data-checkpoint-id=\"" +
           std::to_string(b.checkpoint_id) + "\" " + geometry + "><title>" + HtmlEscape(b.kind) +
           " " + std::to_string(b.checkpoint_id) + ": " + ShortDuration(b.duration_ms) + ", " +
           HtmlEscape(b.status) + "</title></rect>";
  }
  // The ids of the oldest and the newest bar under the x axis.
  const std::string label_y = std::to_string(kTop + plot_h + 18);
  svg += "<text class=\"label\" x=\"" + x0 + "\" y=\"" + label_y + "\">" +
         std::to_string(bars.front().checkpoint_id) + "</text>";
  if (bars.size() > 1) {
    svg += "<text class=\"label\" x=\"" + std::to_string(kLeft + plot_w) + "\" y=\"" + label_y +
           "\" text-anchor=\"end\">" + std::to_string(bars.back().checkpoint_id) + "</text>";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace ckpt
