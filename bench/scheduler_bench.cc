// ckpt-bench-scheduler: the daemon's scheduler in process, without network or disk.
//
// P pipelines, each a real PipelineRunner (coordinator on its own strand, Asio timers) on the
// daemon's io shards (IoShards: one event loop per io thread, a pipeline on the shard its key
// hashes to), with a 1 s interval and first triggers spread evenly over one interval. Every
// pipeline has one in-process session that acks each trigger at once for all of its tasks, and
// the store is MemoryStore (commits complete at once), so a round is
// trigger -> acks posted to the strand -> commit -> complete, and the next trigger is one interval
// after this one. What is measured, over a window after a warm-up:
//   - trigger delay: actual trigger time minus due time, every sample exactly (through
//     DaemonMetrics::trigger_delay_sample), p50/p99/p99.9/max: the timer's lateness, counted from
//     when the round could go; and apart from it the hold, how long the round before kept a
//     round past its interval's due time (held_*: p50/p99/max and how many rounds were held);
//   - OS threads of the process and its RSS (read after the warm-up, before the window's samples
//     fill the sample buffer), CPU over the window.
// Prints one JSON object on stdout. Run each P in its own process: RSS(P) - RSS(0) is then what P
// pipelines cost. With --sessions 0 no worker connects: every pipeline waits for its tasks, which
// measures what an idle pipeline costs (no session, no round).
//
// With --phases hash the phases are set by the start offset instead: every session registers at
// once (as after a restart or a takeover, every worker reconnecting) and each pipeline holds its
// first trigger for a fraction of the interval fixed by its key, so the phases are uniform at
// random rather than even. With --phases spread, the daemon's way (`start_spread_ms` unset): the
// fraction of each pipeline's start slot, the order it was made in. Both report the first
// triggers' spread: the most of them in any tenth of the interval, as a share of the pipelines
// (first_triggers_most_in_a_tenth: at most 0.2 is the daemon's rule).
//
// With --admission-rounds N the daemon's admission caps the rounds in flight at N (admission
// { max_concurrent_rounds }), and --ack-delay-ms D keeps each round in flight for D ms (the acks
// come that long after the trigger, from a timer thread standing in for the workers), so that the
// cap binds: P / interval x D rounds would otherwise be in flight. Reported: the most rounds in
// flight at once (never above N), how many pipelines completed a checkpoint in the window (every
// one should), and the admission wait, ask to admitted (p50/p99 of the window, bucketed as
// ckptd_admission_wait_seconds is).
//
// With --web-rps R the web view (server/web) is loaded through the window, as a browser left open
// on it would be, only harder: R page requests a second, one after the other, alternating the
// pipeline list sorted by last duration (every pipeline filtered and sorted, the most a list page
// costs), the list in key order, and one pipeline's page. Each is served on the control loop as the
// daemon serves it; its time from request to answer is recorded, and the trigger delay of the
// same window shows what the pages cost the pipelines.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <random>

#include "common/bench_admin_backend.h"
#include "common/bench_args.h"
#include "common/instant_ack_sink.h"
#include "common/memory_store.h"
#include "common/proc_stats.h"
#include "common/sample_recorder.h"
#include "core/clock.h"
#include "core/round_admission.h"
#include "runtime/daemon_metrics.h"
#include "runtime/io_shards.h"
#include "runtime/pipeline_runner.h"
#include "web/web_view.h"

namespace {

using namespace ckpt;
using namespace ckpt::bench;
using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// Pipeline i's record: a new pipeline (never triggered), so that its first trigger is the moment
// its session registers, and the benchmark registers session i at i * interval / P into one
// interval. That is how the phases are staggered. A phase set through a stored "last completed"
// time instead would be at the mercy of setup: 100,000 pipelines take a few hundred ms to make, the
// io threads fall behind, every trigger due meanwhile fires late and in a clump, and since each
// next trigger is due one interval after the actual one, the clump comes back round after round.
PipelineKey PipelineKeyOf(int i) { return {"bench", "p" + std::to_string(i)}; }

// The most of `times` inside any window [t, t + width).
size_t MostInAWindow(std::vector<int64_t> times, int64_t width) {
  std::sort(times.begin(), times.end());
  size_t most = 0;
  size_t first = 0;
  for (size_t last = 0; last < times.size(); ++last) {
    while (times[last] - times[first] >= width) ++first;
    most = std::max(most, last - first + 1);
  }
  return most;
}

StoredPipeline MakePipeline(int i, int tasks, int64_t interval_ms) {
  StoredPipeline stored;
  PipelineSpec& spec = stored.record.spec;
  spec.key = PipelineKeyOf(i);
  for (int t = 0; t < tasks; ++t) spec.task_ids.push_back(std::to_string(t));
  spec.interval_ms = interval_ms;
  spec.timeout_ms = 10000;  // the anchors' watchdog: armed on each trigger, cancelled by the acks
  return stored;
}

// The web load of --web-rps: its page times in microseconds, by kind.
struct WebLoad {
  std::vector<int64_t> list_us;
  std::vector<int64_t> pipeline_us;
  uint64_t failed = 0;  // answers other than 200
};

// Requests pages of `web` one after the other, `rps` a second, until `stop`; each on `control`.
WebLoad LoadWebView(WebView& web, boost::asio::io_context& control, int pipelines, double rps,
                    const std::atomic<bool>& stop) {
  WebLoad load;
  std::mt19937 rng(7);
  const auto period =
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(1.0 / rps));
  auto next = SteadyClock::now();
  for (uint64_t n = 0; !stop.load(); ++n) {
    std::string target;
    bool list = true;
    switch (n % 3) {
      case 0: target = "/?sort=duration&order=desc"; break;
      case 1: target = "/api/v1/pipelines"; break;
      default:
        list = false;
        target = "/pipelines/bench/p" +
                 std::to_string(std::uniform_int_distribution<int>(0, pipelines - 1)(rng));
    }
    std::promise<int> answered;
    const auto start = SteadyClock::now();
    boost::asio::post(control, [&web, &target, &answered] {
      web.Serve("GET", target, [&answered](HttpReply reply) { answered.set_value(reply.status); });
    });
    const int status = answered.get_future().get();
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start).count();
    (list ? load.list_us : load.pipeline_us).push_back(us);
    if (status != 200) ++load.failed;
    next += period;
    std::this_thread::sleep_until(next);
  }
  std::sort(load.list_us.begin(), load.list_us.end());
  std::sort(load.pipeline_us.begin(), load.pipeline_us.end());
  return load;
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
                  {"sessions", "1"},
                  {"web-rps", "0"},
                  {"phases", "paced"},
                  {"admission-rounds", "0"},
                  {"ack-delay-ms", "0"}});
  const int pipelines = static_cast<int>(args.Int("pipelines"));
  const int tasks = static_cast<int>(args.Int("tasks"));
  const int64_t interval_ms = args.Int("interval-ms");
  const double warmup_s = args.Double("warmup-s");
  const double measure_s = args.Double("measure-s");
  const bool sessions = args.Int("sessions") != 0;
  const double web_rps = args.Double("web-rps");
  const std::string phases = args.Str("phases");
  const int64_t admission_rounds = args.Int("admission-rounds");
  const int64_t ack_delay_ms = args.Int("ack-delay-ms");
  if (phases != "paced" && phases != "hash" && phases != "spread") {
    std::fprintf(stderr, "--phases: paced, hash or spread, not '%s'\n", phases.c_str());
    return 2;
  }
  // The daemon's rule (Daemon::Start): `threads: 0` means one io thread per core.
  const unsigned threads = args.Int("threads") > 0
                               ? static_cast<unsigned>(args.Int("threads"))
                               : std::max(1u, std::thread::hardware_concurrency());
  spdlog::set_level(spdlog::level::warn);  // the daemon logs every pipeline's start at info

  IoShards shards(threads);
  DaemonMetrics metrics;
  const double rounds_in_window = measure_s * 1000.0 / static_cast<double>(interval_ms);
  SampleRecorder recorder(static_cast<size_t>(pipelines * (rounds_in_window + 2)) + 1024);
  SampleRecorder held(static_cast<size_t>(pipelines * (rounds_in_window + 2)) + 1024);
  metrics.trigger_delay_sample = [&recorder, &held](int64_t delay_micros, int64_t held_micros) {
    recorder.Record(delay_micros);
    held.Record(held_micros);
  };
  MemoryStore store;
  SystemClock clock;

  shards.Start();

  // Every pipeline first, waiting for its tasks; then the sessions, paced over one interval.
  const auto setup_start = SteadyClock::now();
  // Each pipeline's first trigger, in microseconds after the registrations began (0: none yet).
  std::vector<std::atomic<int64_t>> first_trigger_us(static_cast<size_t>(pipelines));
  SteadyClock::time_point registered_at;
  std::vector<std::shared_ptr<PipelineRunner>> runners;
  runners.reserve(pipelines);
  // paced: start_spread 0, the paced registrations alone set each phase. hash and spread: every
  // session registers at once and each pipeline holds its first trigger for its start offset, a
  // fraction of the interval fixed by its key (hash) or its start slot (spread, the daemon's way).
  auto admission = admission_rounds > 0
                       ? std::make_shared<RoundAdmission>(AdmissionCaps{admission_rounds, 0})
                       : nullptr;
  const auto context = std::make_shared<const RunnerContext>(
      RunnerContext{.store = store, .clock = clock, .metrics = metrics, .admission = admission});
  CoordinatorOptions options;
  options.admission = admission.get();
  // The workers' side of --ack-delay-ms: one thread of timers, apart from the daemon's loops.
  boost::asio::io_context acks_io;
  auto acks_work = boost::asio::make_work_guard(acks_io);
  std::thread acks_thread;
  if (ack_delay_ms > 0) acks_thread = std::thread([&acks_io] { acks_io.run(); });
  if (phases == "hash") options.start_spread = Millis(interval_ms);
  if (phases == "spread") options.start_spread = std::nullopt;  // the whole interval
  for (int i = 0; i < pipelines; ++i) {
    auto runner = std::make_shared<PipelineRunner>(shards.For(PipelineKeyOf(i)),
                                                   MakePipeline(i, tasks, interval_ms),
                                                   /*restarted=*/false, context, options);
    if (phases == "spread") runner->SetStartSlot(static_cast<uint64_t>(i));
    runner->Start();
    runners.push_back(std::move(runner));
  }
  const double setup_s = SecondsSince(setup_start);
  if (sessions) {
    std::vector<std::string> task_ids;
    for (int t = 0; t < tasks; ++t) task_ids.push_back(std::to_string(t));
    const auto shared_task_ids = std::make_shared<const std::vector<std::string>>(task_ids);
    const auto first = SteadyClock::now() + std::chrono::milliseconds(interval_ms / 10);
    const std::chrono::duration<double, std::milli> spacing(static_cast<double>(interval_ms) /
                                                            std::max(pipelines, 1));
    registered_at = SteadyClock::now();
    for (int i = 0; i < pipelines; ++i) {
      if (phases == "paced") {
        std::this_thread::sleep_until(
            first + std::chrono::duration_cast<SteadyClock::duration>(spacing * i));
      }
      const SessionId session = static_cast<SessionId>(i) + 1;
      runners[i]->Register(
          session,
          std::make_shared<InstantAckSink>(
              runners[i], session, shared_task_ids, &first_trigger_us[i], registered_at,
              ack_delay_ms > 0 ? &acks_io : nullptr, std::chrono::milliseconds(ack_delay_ms)),
          HelloInfo{"bench-worker", runners[i]->key(), task_ids,
                    /*takeover=*/false, /*principal=*/""});
    }
  }

  std::this_thread::sleep_for(std::chrono::duration<double>(warmup_s));
  BenchAdminBackend backend(runners, store, metrics);
  WebView web(backend, shards.control());
  std::atomic<bool> stop_web{false};
  std::future<WebLoad> web_load;
  const ProcStatus before_window = ReadProcStatus();
  const uint64_t completed0 = metrics.checkpoints_completed_total.load();
  const uint64_t failed0 =
      metrics.checkpoints_failed_total.load() + metrics.checkpoints_expired_total.load();
  const int64_t cpu0 = ProcessCpuMicros();
  std::vector<int64_t> completed_before;
  for (const auto& r : runners) {
    completed_before.push_back(r->pipeline_metrics().last_completed_id.load());
  }
  const LatencyHistogram::Snapshot waits_before = metrics.admission_wait.Take();
  const auto window_start = SteadyClock::now();
  recorder.Arm();
  held.Arm();
  if (web_rps > 0) {
    web_load = std::async(std::launch::async, [&] {
      return LoadWebView(web, shards.control(), pipelines, web_rps, stop_web);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(measure_s));
  recorder.Disarm();
  held.Disarm();
  stop_web = true;
  const WebLoad pages = web_load.valid() ? web_load.get() : WebLoad{};
  const double window_s = SecondsSince(window_start);
  const int64_t cpu1 = ProcessCpuMicros();
  const uint64_t completed1 = metrics.checkpoints_completed_total.load();
  const uint64_t failed1 =
      metrics.checkpoints_failed_total.load() + metrics.checkpoints_expired_total.load();
  const ProcStatus end_window = ReadProcStatus();
  int pipelines_checkpointed = 0;
  for (size_t i = 0; i < runners.size(); ++i) {
    if (runners[i]->pipeline_metrics().last_completed_id.load() > completed_before[i]) {
      ++pipelines_checkpointed;
    }
  }
  LatencyHistogram::Snapshot waits = metrics.admission_wait.Take();
  for (size_t b = 0; b < waits.bucket_counts.size(); ++b) {
    waits.bucket_counts[b] -= waits_before.bucket_counts[b];
  }
  waits.count -= waits_before.count;

  // Stop the io threads before reading the samples: no Record call can be running then.
  acks_work.reset();
  acks_io.stop();
  if (acks_thread.joinable()) acks_thread.join();
  shards.Stop();
  for (auto& r : runners) r->ReleaseAfterStop();

  const std::vector<int64_t> samples = recorder.TakeSorted();
  const std::vector<int64_t> held_samples = held.TakeSorted();
  const auto expected = sessions ? static_cast<uint64_t>(pipelines * rounds_in_window) : 0;
  nlohmann::ordered_json out;
  out["bench"] = web_rps > 0 ? "scheduler_web" : "scheduler";
  out["pipelines"] = pipelines;
  out["tasks"] = tasks;
  out["sessions"] = sessions;
  out["interval_ms"] = interval_ms;
  out["phases"] = phases;
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
  // The other part of a trigger's wait: the round before it held it past the interval's due time.
  out["held_p50_us"] = Percentile(held_samples, 0.50);
  out["held_p99_us"] = Percentile(held_samples, 0.99);
  out["held_max_us"] = held_samples.empty() ? 0 : held_samples.back();
  out["held_rounds"] =
      held_samples.end() - std::upper_bound(held_samples.begin(), held_samples.end(), int64_t{0});
  if (sessions) {
    std::vector<int64_t> firsts;
    for (const auto& first : first_trigger_us) firsts.push_back(first.load());
    const size_t most = MostInAWindow(std::move(firsts), interval_ms * 100);
    out["first_triggers_most_in_a_tenth"] = static_cast<double>(most) / std::max(pipelines, 1);
  }
  out["completed_in_window"] = completed1 - completed0;
  out["failed_in_window"] = failed1 - failed0;
  out["cpu_pct"] = 100.0 * static_cast<double>(cpu1 - cpu0) / 1e6 / window_s;
  if (web_rps > 0) {
    out["web_rps"] = web_rps;
    out["web_list_pages"] = pages.list_us.size();
    out["web_list_p50_us"] = Percentile(pages.list_us, 0.50);
    out["web_list_p99_us"] = Percentile(pages.list_us, 0.99);
    out["web_list_max_us"] = pages.list_us.empty() ? 0 : pages.list_us.back();
    out["web_pipeline_pages"] = pages.pipeline_us.size();
    out["web_pipeline_p50_us"] = Percentile(pages.pipeline_us, 0.50);
    out["web_pipeline_p99_us"] = Percentile(pages.pipeline_us, 0.99);
    out["web_failed"] = pages.failed;
  }
  out["pipelines_checkpointed_in_window"] = pipelines_checkpointed;
  // A run whose pipelines did not keep up (far fewer triggers than expected) is not a clean figure.
  out["status"] = samples.size() * 10 >= expected * 9 ? "ok" : "behind";
  if (admission) {
    out["ack_delay_ms"] = ack_delay_ms;
    out["admission_max_concurrent_rounds"] = admission_rounds;
    out["most_rounds_in_flight"] = admission->most_rounds_in_flight();
    out["rounds_deferred"] = admission->deferred_total();
    out["admission_waits_in_window"] = waits.count;
    out["admission_wait_p50_us"] = waits.QuantileMicros(0.50);
    out["admission_wait_p99_us"] = waits.QuantileMicros(0.99);
    out["admission_wait_max_us"] = waits.max_micros;  // of the whole run
    // Under a cap that binds, fewer rounds run than the interval asks for, by design: the run is
    // clean when the cap held and every pipeline still checkpointed.
    out["status"] = admission->most_rounds_in_flight() <= admission_rounds &&
                            pipelines_checkpointed == pipelines
                        ? "ok"
                        : "failed";
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
