#pragma once
// PrometheusText writes metric families in the Prometheus text exposition format (0.0.4): a HELP
// and a TYPE line once per family, then its samples. Names are the caller's (constants in our
// code); label values and HELP text come escaped, so a job id with quotes or newlines cannot break
// the page.
// Threading: not thread-safe; one writer per scrape.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/histogram.h"

namespace ckpt {

using MetricLabels = std::vector<std::pair<std::string_view, std::string_view>>;

// `\` -> `\\`, `"` -> `\"`, newline -> `\n`: the escapes a label value needs.
std::string EscapeLabelValue(std::string_view value);
// A sample value: integers without a fraction, "+Inf", "-Inf", "NaN", else the shortest form that
// reads back as the same double.
std::string FormatSampleValue(double value);

class PrometheusText {
 public:
  // Starts a family. `type`: counter, gauge or histogram. Counter names end in _total.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample line; `name` may carry a suffix of its family (_bucket, _sum, _count).
  void Sample(std::string_view name, const MetricLabels& labels, double value);
  // The cumulative buckets (le in seconds), _sum and _count of one histogram series.
  void Histogram(std::string_view name, const MetricLabels& labels,
                 const LatencyHistogram::Snapshot& snapshot);

  // Shorthands for a family with one unlabelled sample.
  void Counter(std::string_view name, std::string_view help, double value);
  void Gauge(std::string_view name, std::string_view help, double value);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void WriteLabels(const MetricLabels& labels, std::string_view le = {});

  std::string out_;
};

}  // namespace ckpt
