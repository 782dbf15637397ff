// ckpt-bench-scheduler: the daemon's scheduler in process, without network or disk.
//
// P pipelines, each a real PipelineRunner (coordinator on its own strand, Asio timers) on one
// io_context run by the daemon's thread count, with a 1 s interval and first triggers spread evenly
// over one interval. Every pipeline has one in-process session that acks each trigger at once for
// all of its tasks, and the store is MemoryStore (commits complete at once), so a round is
// trigger -> acks posted to the strand -> commit -> complete, and the next trigger is one interval
// after this one. What is measured, over a window after a warm-up:
//   - trigger delay: actual trigger time minus due time, every sample exactly (through
//     DaemonMetrics::trigger_delay_sample), p50/p99/p99.9/max;
//   - OS threads of the process and its RSS (read after the warm-up, before the window's samples
//     fill the sample buffer), CPU over the window.
// Prints one JSON object on stdout. Run each P in its own process: RSS(P) - RSS(0) is then what P
// pipelines cost. With --sessions 0 no worker connects: every pipeline waits for its tasks, which
// measures what an idle pipeline costs (no session, no round).

#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/bench_args.h"
#include "common/instant_ack_sink.h"
#include "common/memory_store.h"
#include "common/proc_stats.h"
#include "common/sample_recorder.h"
#include "core/clock.h"
#include "runtime/daemon_metrics.h"
#include "runtime/pipeline_runner.h"

namespace {

using namespace ckpt;
using namespace ckpt::bench;
using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// Pipeline i's record, made so that its first trigger is due at wall0 + lead + i * (interval -
// lead) / P: a "restarted" coordinator schedules its next trigger one interval after
// last_completed_at_ms. Two constraints keep the phases staggered:
// - last_completed_at_ms must not lie in the future when the runner starts (the coordinator
//   would clamp the age to 0 and schedule one interval after its start, so every pipeline would
//   take its creation time as its phase: 100,000 pipelines made in 0.4 s, back to back, clumped);
// - a pipeline's first trigger must be due after it is made (setup takes well under an interval:
//   pipeline i is made at about wall0 + i * setup / P).
// A clump, once formed, would persist: the next trigger is one interval after this one.
StoredPipeline MakePipeline(int i, int pipelines, int tasks, int64_t interval_ms, int64_t wall0) {
  StoredPipeline stored;
  PipelineSpec& spec = stored.record.spec;
  spec.key = {"bench", "p" + std::to_string(i)};
  for (int t = 0; t < tasks; ++t) spec.task_ids.push_back(std::to_string(t));
  spec.interval_ms = interval_ms;
  spec.timeout_ms = 10000;  // the anchors' watchdog: armed on each trigger, cancelled by the acks
  const int64_t lead_ms = interval_ms / 20;
  const int64_t phase_ms = static_cast<int64_t>(i) * (interval_ms - lead_ms) / std::max(pipelines, 1);
  stored.record.last_completed_at_ms = wall0 + lead_ms + phase_ms - interval_ms;
  stored.record.last_completed_id = 1;
  stored.id_counter = 1;
  return stored;
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args(argc, argv,
                 {{"pipelines", "1000"},
                  {"tasks", "2"},
                  {"interval-ms", "1000"},
                  {"warmup-s", "2"},
                  {"measure-s", "5"},
                  {"threads", "0"},
                  {"sessions", "1"}});
  const int pipelines = static_cast<int>(args.Int("pipelines"));
  const int tasks = static_cast<int>(args.Int("tasks"));
  const int64_t interval_ms = args.Int("interval-ms");
  const double warmup_s = args.Double("warmup-s");
  const double measure_s = args.Double("measure-s");
  const bool sessions = args.Int("sessions") != 0;
  // The daemon's rule (Daemon::Start): `threads: 0` means one io thread per core.
  const unsigned threads = args.Int("threads") > 0
                               ? static_cast<unsigned>(args.Int("threads"))
                               : std::max(1u, std::thread::hardware_concurrency());
  spdlog::set_level(spdlog::level::warn);  // the daemon logs every pipeline's start at info

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  DaemonMetrics metrics;
  const double rounds_in_window = measure_s * 1000.0 / static_cast<double>(interval_ms);
  SampleRecorder recorder(static_cast<size_t>(pipelines * (rounds_in_window + 2)) + 1024);
  metrics.trigger_delay_sample = [&recorder](int64_t micros) { recorder.Record(micros); };
  MemoryStore store;
  SystemClock clock;

  std::vector<std::thread> io_threads;
  for (unsigned i = 0; i < threads; ++i) io_threads.emplace_back([&io] { io.run(); });

  const auto setup_start = SteadyClock::now();
  const int64_t wall0 = clock.WallMs();
  std::vector<std::shared_ptr<PipelineRunner>> runners;
  runners.reserve(pipelines);
  RunnerOptions options;
  for (int i = 0; i < pipelines; ++i) {
    StoredPipeline stored = MakePipeline(i, pipelines, tasks, interval_ms, wall0);
    auto runner = std::make_shared<PipelineRunner>(io, stored, /*restarted=*/true, store, clock,
                                                   metrics, options);
    runner->Start();
    if (!sessions) {
      runners.push_back(std::move(runner));
      continue;
    }
    const SessionId session = static_cast<SessionId>(i) + 1;
    runner->Register(session,
                     std::make_shared<InstantAckSink>(runner, session, stored.record.spec.task_ids),
                     HelloInfo{"bench-worker", stored.record.spec.key, stored.record.spec.task_ids,
                               /*takeover=*/false});
    runners.push_back(std::move(runner));
  }
  const double setup_s = SecondsSince(setup_start);

  std::this_thread::sleep_for(std::chrono::duration<double>(warmup_s));
  const ProcStatus before_window = ReadProcStatus();
  const uint64_t completed0 = metrics.checkpoints_completed_total.load();
  const uint64_t failed0 = metrics.checkpoints_failed_total.load() +
                           metrics.checkpoints_expired_total.load();
  const int64_t cpu0 = ProcessCpuMicros();
  const auto window_start = SteadyClock::now();
  recorder.Arm();
  std::this_thread::sleep_for(std::chrono::duration<double>(measure_s));
  recorder.Disarm();
  const double window_s = SecondsSince(window_start);
  const int64_t cpu1 = ProcessCpuMicros();
  const uint64_t completed1 = metrics.checkpoints_completed_total.load();
  const uint64_t failed1 = metrics.checkpoints_failed_total.load() +
                           metrics.checkpoints_expired_total.load();
  const ProcStatus end_window = ReadProcStatus();

  // Stop the io threads before reading the samples: no Record call can be running then.
  work.reset();
  io.stop();
  for (auto& t : io_threads) t.join();
  for (auto& r : runners) r->ReleaseAfterStop();

  const std::vector<int64_t> samples = recorder.TakeSorted();
  const auto expected = sessions ? static_cast<uint64_t>(pipelines * rounds_in_window) : 0;
  nlohmann::ordered_json out;
  out["bench"] = "scheduler";
  out["pipelines"] = pipelines;
  out["tasks"] = tasks;
  out["sessions"] = sessions;
  out["interval_ms"] = interval_ms;
  out["io_threads"] = threads;
  out["os_threads"] = end_window.threads;
  out["rss_kb"] = before_window.rss_kb;
  out["rss_kb_end"] = end_window.rss_kb;
  out["setup_s"] = setup_s;
  out["window_s"] = window_s;
  out["samples"] = samples.size();
  out["expected_samples"] = expected;
  out["dropped_samples"] = recorder.dropped();
  out["p50_us"] = Percentile(samples, 0.50);
  out["p99_us"] = Percentile(samples, 0.99);
  out["p999_us"] = Percentile(samples, 0.999);
  out["max_us"] = samples.empty() ? 0 : samples.back();
  out["completed_in_window"] = completed1 - completed0;
  out["failed_in_window"] = failed1 - failed0;
  out["cpu_pct"] = 100.0 * static_cast<double>(cpu1 - cpu0) / 1e6 / window_s;
  // A run whose pipelines did not keep up (far fewer triggers than expected) is not a clean figure.
  out["status"] = samples.size() * 10 >= expected * 9 ? "ok" : "behind";
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
