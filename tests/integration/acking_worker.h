#pragma once
// A pipeline served through the worker SDK that acks every trigger for all its tasks at once
// (or, on request, holds its acks or declines), and counts what it heard: for the tests that run
// workers against a real daemon in process.

#include <ckpt/worker.h>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ckpt::testing {

struct AckingWorker {
  AckingWorker(sdk::WorkerRuntime& runtime, const std::string& pipeline,
               std::vector<std::string> tasks) {
    sdk::PipelineHandlers handlers;
    handlers.on_trigger = [this, tasks](const sdk::Trigger& t) {
      last_trigger_kind = t.kind;
      last_trigger_position = t.position;
      {
        std::lock_guard lock(mu);
        triggered_ids.push_back(t.checkpoint_id);
      }
      if (hold.load()) return;  // a stuck worker: never answers
      if (decline_next.load() > 0) {
        --decline_next;
        {
          std::lock_guard lock(mu);
          declined_ids.push_back(t.checkpoint_id);
        }
        worker->Decline(t.checkpoint_id, tasks.front(), "declined by the test");
        return;
      }
      for (const auto& task : tasks) {
        worker->Ack(t.checkpoint_id, task,
                    {"mem://" + task + "/" + std::to_string(t.checkpoint_id), 1, ""});
      }
    };
    handlers.on_complete = [this](int64_t id, sdk::CheckpointKind kind) {
      last_complete = id;
      last_complete_kind = kind;
      {
        std::lock_guard lock(mu);
        completed_ids.push_back(id);
      }
      ++completes;
    };
    handlers.on_abort = [this](int64_t, const std::string&) { ++aborts; };
    handlers.on_state = [this](sdk::PipelineState state, const std::string&) {
      last_state = state;
      ++state_changes;
    };
    handlers.on_savepoint_refused = [this](const std::string&) { ++savepoints_refused; };
    worker = runtime.AddPipeline({.worker_id = "sdk-" + pipeline,
                                  .job_id = "job",
                                  .pipeline_id = pipeline,
                                  .task_ids = tasks,
                                  .backoff_initial = std::chrono::milliseconds(50),
                                  .backoff_max = std::chrono::milliseconds(200)},
                                 std::move(handlers));
    worker->Start();
  }
  // No handler runs once Stop() returned: what they write may go.
  ~AckingWorker() { worker->Stop(); }
  AckingWorker(const AckingWorker&) = delete;
  AckingWorker& operator=(const AckingWorker&) = delete;

  std::vector<int64_t> Completed() const {
    std::lock_guard lock(mu);
    return completed_ids;
  }
  std::vector<int64_t> Triggered() const {
    std::lock_guard lock(mu);
    return triggered_ids;
  }
  std::vector<int64_t> Declined() const {
    std::lock_guard lock(mu);
    return declined_ids;
  }

  std::shared_ptr<sdk::PipelineWorker> worker;
  std::atomic<bool> hold{false};
  std::atomic<int> decline_next{0};
  std::atomic<int> completes{0};
  std::atomic<int> aborts{0};
  std::atomic<int64_t> last_complete{0};
  std::atomic<sdk::CheckpointKind> last_complete_kind{sdk::CheckpointKind::kUnspecified};
  std::atomic<sdk::CheckpointKind> last_trigger_kind{sdk::CheckpointKind::kUnspecified};
  std::atomic<int64_t> last_trigger_position{0};
  std::atomic<sdk::PipelineState> last_state{sdk::PipelineState::kUnspecified};
  std::atomic<int> state_changes{0};
  std::atomic<int> savepoints_refused{0};
  mutable std::mutex mu;
  std::vector<int64_t> completed_ids;  // guarded by mu
  std::vector<int64_t> triggered_ids;  // guarded by mu
  std::vector<int64_t> declined_ids;   // guarded by mu
};

}  // namespace ckpt::testing
