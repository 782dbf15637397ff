// ckpt-bench-store: durable checkpoint completions per second into SqliteStore, the daemon's store.
//
// Each of --inflight pipelines keeps one checkpoint commit in flight (as a pipeline does: at most
// one round pending) and submits its next as soon as the previous is durable, from the store's
// completion callback. Every commit is what the runner hands over when a round's last ack arrives:
// the checkpoint with its task states, the pipeline record after it, and history trimming
// (retained 10).
//   --inflight 1 --batch-spacing-us 0
//                     one transaction and one fsync per checkpoint (the batch is always one)
//   --inflight 1000   group commit: the writer takes everything that arrived during the last
//                     fsync (or while it paced)
//   --rate R          instead of a closed loop, R commits per second spread evenly over --inflight
//                     pipelines (one in flight each): the latency at a load the daemon really sees
//   --batch-spacing-us N
//                     the writer's group commit pacing (SqliteStoreOptions::min_batch_spacing;
//                     default: the daemon's)
//   --etcd URL[,URL...]
//                     the etcd backend instead (store.backend etcd), under a prefix of its own
//                     (removed afterwards), fenced as a leader's store is
//   --etcd-max-txn-ops N
//                     store.etcd.max_txn_ops (default 128, etcd's own default): the members
//                     must run with --max-txn-ops N or more, which is checked first
// Latency is last ack to complete as the store contributes to it: CommitCheckpoint called to its
// durable callback. The file is in --dir (removed first), on the disk the daemon would use.
// Prints one JSON object on stdout.

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include <unistd.h>

#include "common/bench_args.h"
#include "common/proc_stats.h"
#include "common/sample_recorder.h"
#include "etcd/etcd_store.h"
#include "sqlite/sqlite_store.h"

namespace {

using namespace ckpt;
using namespace ckpt::bench;
using SteadyClock = std::chrono::steady_clock;

int64_t MicrosSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t).count();
}

// One pipeline's side of the loop. Touched by the thread that submits its commit and then by the
// store's writer thread in the callback; one commit in flight at a time orders the two.
struct PipelineSlot {
  PipelineRecord record;
  int64_t next_id = 1;
};

class StoreLoad {
 public:
  StoreLoad(GroupCommitStore& store, int pipelines, int tasks, SampleRecorder& latencies)
      : store_(store), latencies_(latencies), slots_(pipelines) {
    for (int i = 0; i < pipelines; ++i) {
      PipelineSpec& spec = slots_[i].record.spec;
      spec.key = {"bench", "p" + std::to_string(i)};
      for (int t = 0; t < tasks; ++t) spec.task_ids.push_back(std::to_string(t));
      spec.interval_ms = 1000;
      spec.retained = 10;
    }
  }

  // Creates every pipeline with a reserved id range, durably.
  void Populate() {
    for (auto& slot : slots_) {
      store_.PutPipeline(slot.record, nullptr);
      store_.ReserveIds(slot.record.spec.key, int64_t{1} << 40, nullptr);
    }
    store_.Flush();
  }

  // Submits pipeline i's next checkpoint; `resubmit`: submit the next one from its callback.
  void Submit(int i, bool resubmit) {
    PipelineSlot& slot = slots_[i];
    CompletedCheckpoint cp;
    cp.checkpoint_id = slot.next_id++;
    cp.triggered_at_ms = 1'700'000'000'000 + cp.checkpoint_id * 1000;
    cp.finished_at_ms = cp.triggered_at_ms + 5;
    for (const std::string& task : slot.record.spec.task_ids) {
      cp.task_states[task] = TaskState{"s3://bucket/bench/" + slot.record.spec.key.pipeline_id +
                                           "/chk-" + std::to_string(cp.checkpoint_id) + "/" + task,
                                       4096, "crc32c:1a2b3c4d"};
    }
    slot.record.counters.completed_count += 1;
    slot.record.last_completed_id = cp.checkpoint_id;
    slot.record.last_completed_at_ms = cp.finished_at_ms;
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    const auto submitted = SteadyClock::now();
    CheckpointCommit commit{
        slot.record.spec.key, slot.record.spec.retained, slot.record.progress(), std::move(cp), {}};
    store_.CommitCheckpoint(commit, [this, i, resubmit, submitted](Status s) {
      // The store's writer thread.
      latencies_.Record(MicrosSince(submitted));
      if (s.ok()) {
        completed_.fetch_add(1, std::memory_order_relaxed);
      } else {
        failed_.fetch_add(1, std::memory_order_relaxed);
      }
      in_flight_.fetch_sub(1, std::memory_order_relaxed);
      if (resubmit && running_.load(std::memory_order_relaxed)) Submit(i, true);
    });
  }

  void Stop() { running_.store(false); }
  uint64_t completed() const { return completed_.load(); }
  uint64_t failed() const { return failed_.load(); }
  int64_t in_flight() const { return in_flight_.load(); }
  size_t pipelines() const { return slots_.size(); }

 private:
  GroupCommitStore& store_;
  SampleRecorder& latencies_;
  std::vector<PipelineSlot> slots_;
  std::atomic<bool> running_{true};
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<int64_t> in_flight_{0};
};

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> parts;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    if (comma > from) parts.push_back(text.substr(from, comma - from));
    from = comma + 1;
  }
  return parts;
}

// A client of the etcd cluster at `endpoints` (comma-separated), for keys under `prefix`.
Result<std::shared_ptr<EtcdClient>> ConnectEtcd(const std::string& endpoints,
                                                const std::string& prefix, int64_t max_txn_ops) {
  EtcdSettings settings;
  settings.endpoints = SplitComma(endpoints);
  settings.prefix = prefix;
  settings.max_txn_ops = max_txn_ops;
  auto client = EtcdClient::Create(settings);
  if (!client.ok()) return client.status();
  return std::shared_ptr<EtcdClient>(std::move(*client));
}

// The etcd store under the client's prefix, fenced by a key of its own (as a leader's is by its
// election key); an error when etcd cannot be reached.
Result<std::unique_ptr<EtcdStore>> OpenEtcd(std::shared_ptr<EtcdClient> client,
                                            std::chrono::microseconds spacing) {
  const std::string fence_key = client->settings().prefix + "/election/bench";
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(fence_key);
  put->set_value("ckpt-bench-store");
  etcdserverpb::TxnResponse response;
  EtcdError error;
  if (!client->Txn(txn, &response, &error)) return error.status;
  GroupCommitOptions options;
  options.min_batch_spacing = spacing;
  auto store = EtcdStore::Create(std::move(client), nullptr, std::move(options));
  store->backend().SetFence(fence_key, response.header().revision());
  if (Status s = store->backend().CheckTxnLimit(); !s.ok()) return s;
  return store;
}

// Deletes everything under the client's prefix (the run's keys).
void RemoveEtcdPrefix(EtcdClient& client) {
  const std::string root = client.settings().prefix + "/";
  etcdserverpb::TxnRequest txn;
  auto* del = txn.add_success()->mutable_request_delete_range();
  del->set_key(root);
  del->set_range_end(PrefixEnd(root));
  etcdserverpb::TxnResponse response;
  EtcdError error;
  client.Txn(txn, &response, &error);
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args(
      argc, argv,
      {{"dir", "bench-store-data"},
       {"inflight", "1000"},
       {"rate", "0"},
       {"tasks", "2"},
       {"warmup-s", "1"},
       {"measure-s", "3"},
       {"batch-spacing-us", std::to_string(SqliteStoreOptions{}.min_batch_spacing.count())},
       {"etcd", ""},
       {"etcd-max-txn-ops", std::to_string(EtcdSettings{}.max_txn_ops)}});
  const int inflight = static_cast<int>(args.Int("inflight"));
  const double rate = args.Double("rate");
  const double warmup_s = args.Double("warmup-s");
  const double measure_s = args.Double("measure-s");
  spdlog::set_level(spdlog::level::warn);

  const std::string etcd = args.Str("etcd");
  std::shared_ptr<EtcdClient> etcd_client;
  const auto spacing = std::chrono::microseconds(args.Int("batch-spacing-us"));
  std::unique_ptr<GroupCommitStore> opened;
  if (etcd.empty()) {
    std::filesystem::remove_all(args.Str("dir"));
    SqliteStoreOptions options;
    options.min_batch_spacing = spacing;
    auto sqlite = SqliteStore::Open(args.Str("dir"), options);
    if (!sqlite.ok()) {
      std::fprintf(stderr, "ckpt-bench-store: %s\n", sqlite.status().ToString().c_str());
      return 1;
    }
    opened = std::move(*sqlite);
  } else {
    auto client = ConnectEtcd(etcd, "/ckpt-bench-store/" + std::to_string(getpid()),
                              args.Int("etcd-max-txn-ops"));
    auto etcd_store = client.ok() ? OpenEtcd(*client, spacing)
                                  : Result<std::unique_ptr<EtcdStore>>(client.status());
    if (!etcd_store.ok()) {
      std::fprintf(stderr, "ckpt-bench-store: %s\n", etcd_store.status().ToString().c_str());
      return 1;
    }
    etcd_client = *client;
    opened = std::move(*etcd_store);
  }
  GroupCommitStore& store = *opened;
  SampleRecorder latencies(static_cast<size_t>(4'000'000));
  StoreLoad load(store, inflight, static_cast<int>(args.Int("tasks")), latencies);
  load.Populate();

  std::atomic<bool> pacing{true};
  std::thread pacer;
  if (rate > 0) {
    // Open loop: pipeline (k mod inflight) at start + k / rate, skipped while its previous commit
    // is still in flight (a pipeline never has two rounds pending).
    pacer = std::thread([&] {
      const auto start = SteadyClock::now();
      for (uint64_t k = 0; pacing.load(); ++k) {
        const auto due = start + std::chrono::duration_cast<SteadyClock::duration>(
                                     std::chrono::duration<double>(static_cast<double>(k) / rate));
        std::this_thread::sleep_until(due);
        if (load.in_flight() < static_cast<int64_t>(load.pipelines())) {
          load.Submit(static_cast<int>(k % load.pipelines()), /*resubmit=*/false);
        }
      }
    });
  } else {
    for (int i = 0; i < inflight; ++i) load.Submit(i, /*resubmit=*/true);
  }

  std::this_thread::sleep_for(std::chrono::duration<double>(warmup_s));
  const uint64_t completed0 = load.completed();
  const uint64_t batches0 = store.batches_committed();
  const auto window_start = SteadyClock::now();
  const int64_t cpu0 = ProcessCpuMicros();
  latencies.Arm();
  std::this_thread::sleep_for(std::chrono::duration<double>(measure_s));
  latencies.Disarm();
  const double window_s = std::chrono::duration<double>(SteadyClock::now() - window_start).count();
  const uint64_t completed1 = load.completed();
  const uint64_t batches1 = store.batches_committed();
  const double cpu_s = static_cast<double>(ProcessCpuMicros() - cpu0) / 1e6;
  pacing.store(false);
  if (pacer.joinable()) pacer.join();
  load.Stop();
  store.Flush();  // every callback has run: the latency buffer is final

  const std::vector<int64_t> samples = latencies.TakeSorted();
  const double completions = static_cast<double>(completed1 - completed0);
  const double batches = static_cast<double>(batches1 - batches0);
  nlohmann::ordered_json out;
  out["bench"] = "store";
  out["mode"] = rate > 0 ? "paced" : (inflight == 1 ? "single" : "group");
  out["inflight"] = inflight;
  out["rate"] = rate;
  out["window_s"] = window_s;
  out["completions"] = completed1 - completed0;
  out["completions_per_s"] = completions / window_s;
  out["batches_per_s"] = batches / window_s;
  out["mean_batch"] = batches > 0 ? completions / batches : 0.0;
  out["batch_spacing_us"] = spacing.count();
  out["backend"] = etcd.empty() ? "sqlite" : "etcd";
  if (!etcd.empty()) out["etcd_max_txn_ops"] = args.Int("etcd-max-txn-ops");
  // The whole process (the writer thread and this benchmark's load), per durable completion.
  out["cpu_pct"] = 100.0 * cpu_s / window_s;
  out["cpu_us_per_completion"] = completions > 0 ? 1e6 * cpu_s / completions : 0.0;
  out["failed"] = load.failed();
  out["latency_samples"] = samples.size();
  out["latency_p50_us"] = Percentile(samples, 0.50);
  out["latency_p99_us"] = Percentile(samples, 0.99);
  out["latency_max_us"] = samples.empty() ? 0 : samples.back();
  out["status"] = load.failed() == 0 ? "ok" : "failed";
  std::printf("%s\n", out.dump().c_str());
  opened.reset();
  if (etcd_client) {
    RemoveEtcdPrefix(*etcd_client);
  } else {
    std::filesystem::remove_all(args.Str("dir"));
  }
  return 0;
}
