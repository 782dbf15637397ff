#include "metrics/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace ckpt {

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// HELP text escapes only backslash and newline.
std::string EscapeHelp(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Counters are integers far below 2^53: print them as integers, not "1e+06".
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(value));
  }
  // Plain decimals ("0.0005", not "5e-04") where they stay short: bucket bounds read as written.
  const double magnitude = std::fabs(value);
  const auto format =
      magnitude >= 1e-6 && magnitude < 1e15 ? std::chars_format::fixed : std::chars_format::general;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, format);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

void PrometheusText::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusText::WriteLabels(const MetricLabels& labels, std::string_view le) {
  if (labels.empty() && le.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += key;
    out_ += "=\"";
    out_ += EscapeLabelValue(value);
    out_ += '"';
  }
  if (!le.empty()) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += '}';
}

void PrometheusText::Sample(std::string_view name, const MetricLabels& labels, double value) {
  out_ += name;
  WriteLabels(labels);
  out_ += ' ';
  out_ += FormatSampleValue(value);
  out_ += '\n';
}

void PrometheusText::Histogram(std::string_view name, const MetricLabels& labels,
                               const LatencyHistogram::Snapshot& snapshot) {
  const auto& bounds = LatencyHistogram::BucketBoundsSeconds();
  const std::string bucket = std::string(name) + "_bucket";
  // The buckets are read one by one while others may still count: derive _count from them so
  // that the +Inf bucket and _count always agree, as Prometheus expects.
  uint64_t cumulative = 0;
  for (size_t i = 0; i < snapshot.bucket_counts.size(); ++i) {
    cumulative += snapshot.bucket_counts[i];
    if (i >= bounds.size()) continue;  // the overflow bucket only feeds +Inf
    out_ += bucket;
    WriteLabels(labels, FormatSampleValue(bounds[i]));
    out_ += ' ';
    out_ += std::to_string(cumulative);
    out_ += '\n';
  }
  out_ += bucket;
  WriteLabels(labels, "+Inf");
  out_ += ' ';
  out_ += std::to_string(cumulative);
  out_ += '\n';
  Sample(std::string(name) + "_sum", labels, snapshot.sum_seconds);
  Sample(std::string(name) + "_count", labels, static_cast<double>(cumulative));
}

void PrometheusText::Counter(std::string_view name, std::string_view help, double value) {
  Family(name, "counter", help);
  Sample(name, {}, value);
}

void PrometheusText::Gauge(std::string_view name, std::string_view help, double value) {
  Family(name, "gauge", help);
  Sample(name, {}, value);
}

}  // namespace ckpt
