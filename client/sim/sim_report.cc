#include "sim/sim_report.h"

#include <cmath>
#include <cstdio>

namespace ckpt::sim {
namespace {

// Microsecond resolution is all the samples have.
double Round3(double ms) { return std::round(ms * 1000.0) / 1000.0; }

nlohmann::ordered_json LatencyJson(const LatencySummary& latency) {
  return {{"p50", Round3(latency.p50_ms)},
          {"p99", Round3(latency.p99_ms)},
          {"max", Round3(latency.max_ms)}};
}

std::string LatencyText(const LatencySummary& latency) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "p50 %.2f  p99 %.2f  max %.2f  (%llu samples)",
                latency.p50_ms, latency.p99_ms, latency.max_ms,
                static_cast<unsigned long long>(latency.count));
  return buffer;
}

}  // namespace

nlohmann::ordered_json SummaryToJson(const SimSummary& s) {
  nlohmann::ordered_json json = {
      {"pipelines", s.pipelines},
      {"tasks", s.tasks},
      {"triggers", s.triggers},
      {"acks", s.acks},
      {"declines", s.declines},
      {"completes", s.completes},
      {"commits", s.commits},
      {"all_committed", s.all_committed},
      {"aborts", s.aborts},
      {"aborts_at_goodbye", s.aborts_at_goodbye},
      // duration_ms: trigger to complete as the worker saw it, {p50, p99, max} like
      // trigger_gap_ms (the documented summary, ckpt-worker-sim(1)); run_ms: how long it ran.
      {"duration_ms", LatencyJson(s.checkpoint)},
      {"run_ms", s.duration_ms},
      {"trigger_gap_ms", LatencyJson(s.trigger_gap)},
      {"connects", s.connects},
      {"reconnects", s.reconnects},
      {"disconnects", s.disconnects},
      {"dropped_sends", s.dropped_sends},
      {"stale_messages", s.stale_messages},
      {"leader_redirects", s.leader_redirects},
      {"restores", s.restores},
      {"releases", s.releases},
      {"restore_files_missing", s.restore_files_missing},
      {"restores_failed", s.restores_failed},
      {"aligned_rounds", s.aligned_rounds},
      {"position_spread_max", s.position_spread_max},
      {"positions_passed", s.positions_passed},
  };
  if (s.group_trigger_skew) {
    json["trigger_skew_ms"] = LatencyJson(*s.group_trigger_skew);
    json["trigger_skew_ms"]["rounds"] = s.group_trigger_skew->count;
  }
  return json;
}

std::string SummaryToText(const SimSummary& s) {
  char head[512];
  std::snprintf(
      head, sizeof head,
      "ckpt-worker-sim: job %s on %s, %d pipelines, %d tasks, %.1f s\n"
      "  triggers %llu  acks %llu  declines %llu  completes %llu  aborts %llu\n",
      s.job.c_str(), s.server.c_str(), s.pipelines, s.tasks, s.duration_ms / 1000.0,
      static_cast<unsigned long long>(s.triggers), static_cast<unsigned long long>(s.acks),
      static_cast<unsigned long long>(s.declines), static_cast<unsigned long long>(s.completes),
      static_cast<unsigned long long>(s.aborts));
  char tail[400];
  std::snprintf(
      tail, sizeof tail,
      "  connects %llu  reconnects %llu  disconnects %llu  dropped sends %llu\n"
      "  leader redirects %llu  stale messages %llu\n"
      "  restores %llu  releases %llu  restore files missing %llu\n",
      static_cast<unsigned long long>(s.connects), static_cast<unsigned long long>(s.reconnects),
      static_cast<unsigned long long>(s.disconnects),
      static_cast<unsigned long long>(s.dropped_sends),
      static_cast<unsigned long long>(s.leader_redirects),
      static_cast<unsigned long long>(s.stale_messages),
      static_cast<unsigned long long>(s.restores), static_cast<unsigned long long>(s.releases),
      static_cast<unsigned long long>(s.restore_files_missing));
  std::string text = std::string(head) +
                     "  checkpoint ms (trigger to complete): " + LatencyText(s.checkpoint) +
                     "\n  trigger gap ms: " + LatencyText(s.trigger_gap) + "\n" + tail;
  if (s.aligned_rounds > 0 || s.positions_passed > 0) {
    text += "  aligned rounds " + std::to_string(s.aligned_rounds) + "  position spread max " +
            std::to_string(s.position_spread_max) + "  positions passed " +
            std::to_string(s.positions_passed) + "\n";
  }
  return text;
}

}  // namespace ckpt::sim
