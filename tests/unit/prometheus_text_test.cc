// The Prometheus text format writer: escaping, value formatting and histogram shape; the
// histogram's buckets.
#include "metrics/prometheus_text.h"

#include "core/spec_validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ckpt {
namespace {

TEST(PrometheusText, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\"b"), "a\\\"b");
  EXPECT_EQ(EscapeLabelValue("back\\slash"), "back\\\\slash");
  EXPECT_EQ(EscapeLabelValue("two\nlines"), "two\\nlines");
  EXPECT_EQ(EscapeLabelValue("ünï"), "ünï");  // UTF-8 passes as it is
}

TEST(PrometheusText, FormatsValues) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(42), "42");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(1e6), "1000000");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(0.00005), "0.00005");
  EXPECT_EQ(FormatSampleValue(0.0005), "0.0005");
  EXPECT_EQ(FormatSampleValue(1e-9), "1e-09");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
  EXPECT_EQ(std::stod(FormatSampleValue(0.1 + 0.2)), 0.1 + 0.2);  // round-trips exactly
}

TEST(PrometheusText, WritesHelpTypeAndLabelledSamples) {
  PrometheusText out;
  out.Family("x_total", "counter", "Things.\nWith a \\ in the help.");
  out.Sample("x_total", {{"job", "j\"1"}, {"pipeline", "p"}}, 3);
  out.Gauge("y", "A gauge.", 1.5);
  EXPECT_EQ(out.text(),
            "# HELP x_total Things.\\nWith a \\\\ in the help.\n"
            "# TYPE x_total counter\n"
            "x_total{job=\"j\\\"1\",pipeline=\"p\"} 3\n"
            "# HELP y A gauge.\n"
            "# TYPE y gauge\n"
            "y 1.5\n");
}

TEST(PrometheusText, HistogramBucketsAreCumulativeInSeconds) {
  LatencyHistogram histogram;
  histogram.ObserveMicros(40);          // <= 50 us
  histogram.ObserveMicros(700);         // <= 1 ms
  histogram.ObserveMicros(2'000'000);   // <= 2.5 s
  histogram.ObserveMicros(90'000'000);  // past the last bound (60 s)
  PrometheusText out;
  out.Histogram("d_seconds", {{"k", "v"}}, histogram.Take());
  const std::string& text = out.text();
  EXPECT_NE(text.find("d_seconds_bucket{k=\"v\",le=\"0.00005\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("d_seconds_bucket{k=\"v\",le=\"0.0005\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("d_seconds_bucket{k=\"v\",le=\"0.001\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("d_seconds_bucket{k=\"v\",le=\"2.5\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("d_seconds_bucket{k=\"v\",le=\"60\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("d_seconds_bucket{k=\"v\",le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("d_seconds_count{k=\"v\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("d_seconds_sum{k=\"v\"} 92.00074\n"), std::string::npos) << text;
  // One line per bound, +Inf, _sum and _count.
  const size_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(lines, LatencyHistogram::BucketBoundsSeconds().size() + 3);
}

TEST(PrometheusText, EmptyHistogramStillHasEveryLine) {
  LatencyHistogram histogram;
  PrometheusText out;
  out.Histogram("e_seconds", {}, histogram.Take());
  EXPECT_NE(out.text().find("e_seconds_bucket{le=\"+Inf\"} 0\n"), std::string::npos);
  EXPECT_NE(out.text().find("e_seconds_sum 0\n"), std::string::npos);
  EXPECT_NE(out.text().find("e_seconds_count 0\n"), std::string::npos);
}

}  // namespace
}  // namespace ckpt

namespace ckpt {
namespace {

TEST(LatencyHistogram, BucketsReachTheLongestTimeout) {
  // A checkpoint may take up to its timeout (600 s by default, a week at most): a duration near
  // it must land in a bucket of its own, not in +Inf.
  const auto& bounds = LatencyHistogram::BucketBoundsSeconds();
  EXPECT_GE(bounds.back(), static_cast<double>(kMaxDurationMs) / 1000);
  LatencyHistogram h;
  h.ObserveMicros(599LL * 1000 * 1000);
  const auto snapshot = h.Take();
  const size_t overflow = snapshot.bucket_counts.size() - 1;
  EXPECT_EQ(snapshot.bucket_counts[overflow], 0u);
  EXPECT_LE(snapshot.QuantileMicros(1.0), 600.0 * 1e6);
}

}  // namespace
}  // namespace ckpt
