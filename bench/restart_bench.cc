// ckpt-bench-restart: how long a daemon takes from start to every stored pipeline scheduled again.
//
// First fills a SQLite store (the daemon's file in --dir) with --pipelines pipelines, each with a
// reserved id range and one completed checkpoint (so that its schedule continues from the stored
// time), then closes it. Then, timed: a Daemon is constructed on that directory and started (open
// the store, load every pipeline, make a runner each, start the io threads and the gRPC server on
// 127.0.0.1:0), and the run waits until every runner has started on its strand, i.e. has armed its
// next wakeup (an Inspect posted after Start runs only after it). Also reported: until the store
// has made every pipeline's restart (generation bump, id reservation) durable.
// Logs at the daemon's default level (info) go to stderr. Prints one JSON object on stdout.

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "app/daemon.h"
#include "common/bench_args.h"
#include "common/proc_stats.h"
#include "sqlite/sqlite_store.h"

namespace {

using namespace ckpt;
using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

Status Populate(const std::string& dir, int pipelines, int tasks) {
  auto opened = SqliteStore::Open(dir);
  if (!opened.ok()) return opened.status();
  SqliteStore& store = **opened;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (int i = 0; i < pipelines; ++i) {
    PipelineRecord record;
    record.spec.key = {"bench", "p" + std::to_string(i)};
    for (int t = 0; t < tasks; ++t) record.spec.task_ids.push_back(std::to_string(t));
    record.spec.interval_ms = 1000;
    record.spec.timeout_ms = 10000;
    CompletedCheckpoint cp;
    cp.checkpoint_id = 1;
    cp.triggered_at_ms = now_ms - 1000;
    cp.finished_at_ms = now_ms - 995;
    for (const auto& task : record.spec.task_ids) {
      cp.task_states[task] = TaskState{"s3://bucket/bench/p" + std::to_string(i) + "/chk-1/" + task,
                                       4096, "crc32c:1a2b3c4d"};
    }
    record.counters.completed_count = 1;
    record.last_completed_id = 1;
    record.last_completed_at_ms = cp.finished_at_ms;
    store.PutPipeline(record, nullptr);
    store.ReserveIds(record.spec.key, 100, nullptr);
    store.CommitCheckpoint(
        CheckpointCommit{
            record.spec.key, record.spec.retained, record.progress(), std::move(cp), {}},
        nullptr);
  }
  store.Flush();
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  ckpt::bench::BenchArgs args(
      argc, argv,
      {{"dir", "bench-restart-data"}, {"pipelines", "100000"}, {"tasks", "2"}, {"threads", "0"}});
  const std::string dir = args.Str("dir");
  const int pipelines = static_cast<int>(args.Int("pipelines"));
  // The daemon's default log.level, on stderr: stdout carries only the result.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("ckptd"));
  spdlog::set_level(spdlog::level::info);

  std::filesystem::remove_all(dir);
  const auto populate_start = SteadyClock::now();
  if (Status s = Populate(dir, pipelines, static_cast<int>(args.Int("tasks"))); !s.ok()) {
    std::fprintf(stderr, "ckpt-bench-restart: %s\n", s.ToString().c_str());
    return 1;
  }
  const double populate_s = SecondsSince(populate_start);

  DaemonConfig config;
  config.listen = "127.0.0.1:0";
  config.data_dir = dir;
  config.threads = static_cast<int>(args.Int("threads"));
  config.shutdown_grace_ms = 1000;

  const auto start = SteadyClock::now();
  Daemon daemon(config);
  Status started = daemon.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "ckpt-bench-restart: %s\n", started.ToString().c_str());
    return 1;
  }
  const double start_returned_s = SecondsSince(start);
  std::mutex mu;
  std::condition_variable cv;
  size_t scheduled = 0;
  size_t armed = 0;
  const auto runners = daemon.pipelines().registry().All();
  for (const auto& runner : runners) {
    runner->Inspect([&](const PipelineCoordinator& c) {
      std::lock_guard lock(mu);  // the bench's own counter; a benchmark-only wait
      ++scheduled;
      if (c.State() == PipelineState::kWaitingForTasks) ++armed;
      if (scheduled == runners.size()) cv.notify_one();
    });
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return scheduled == runners.size(); });
  }
  const double all_scheduled_s = SecondsSince(start);
  daemon.store().Flush();
  const double durable_s = SecondsSince(start);
  const auto proc = ckpt::bench::ReadProcStatus();
  daemon.Shutdown();

  nlohmann::ordered_json out;
  out["bench"] = "restart";
  out["pipelines"] = pipelines;
  out["loaded"] = runners.size();
  out["waiting_for_tasks"] = armed;
  out["populate_s"] = populate_s;
  out["start_returned_s"] = start_returned_s;
  out["all_scheduled_s"] = all_scheduled_s;
  out["restart_durable_s"] = durable_s;
  out["rss_kb"] = proc.rss_kb;
  out["os_threads"] = proc.threads;
  out["status"] = runners.size() == static_cast<size_t>(pipelines) ? "ok" : "failed";
  std::printf("%s\n", out.dump().c_str());
  std::filesystem::remove_all(dir);
  return 0;
}
