#pragma once
// What the store tests share: records and checkpoints to write, waiting for a write's callback
// with a deadline, a gate that holds the writer thread, and reading a store's file whole.

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/metadata_store.h"

namespace ckpt {

// Generous: TSan and a loaded CI machine are slow, and a passing test never waits this long.
inline constexpr auto kStoreTestDeadline = std::chrono::seconds(30);

// Issues a write and waits (with a deadline) for its callback.
inline Status Await(const std::function<void(MetadataStore::Done)>& issue) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  issue([promise](Status s) { promise->set_value(std::move(s)); });
  if (future.wait_for(kStoreTestDeadline) != std::future_status::ready) {
    return Status::DeadlineExceeded("store callback did not run within the deadline");
  }
  return future.get();
}

// Collects write callbacks' outcomes (their numbers and Statuses) in the order they ran.
class Outcomes {
 public:
  MetadataStore::Done Record(int n) {
    return [this, n](Status s) {
      std::lock_guard lock(mu_);
      seen_.emplace_back(n, std::move(s));
    };
  }
  std::vector<std::pair<int, Status>> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<int, Status>> seen_;
};

inline PipelineRecord MakeRecord(const std::string& job, const std::string& pipeline,
                                 int retained = 10) {
  PipelineRecord r;
  r.spec.key = {job, pipeline};
  r.spec.task_ids = {"0", "1", "2"};
  r.spec.retained = retained;
  return r;
}

inline CompletedCheckpoint MakeCheckpoint(int64_t id,
                                          CheckpointKind kind = CheckpointKind::kCheckpoint) {
  CompletedCheckpoint cp;
  cp.checkpoint_id = id;
  cp.kind = kind;
  cp.triggered_at_ms = 1700000000000 + id * 1000;
  cp.finished_at_ms = cp.triggered_at_ms + 250;
  if (kind != CheckpointKind::kCheckpoint) cp.location = "s3://bucket/sp-" + std::to_string(id);
  // Even ids taken at a position (positions stored and loaded), odd ones without (0).
  if (id % 2 == 0) cp.position = id * 1000;
  cp.task_states["0"] = {"file:///state/" + std::to_string(id) + "/0", 100 + id, "crc:0"};
  cp.task_states["1"] = {"file:///state/" + std::to_string(id) + "/1", 200 + id, "crc:1"};
  // Task 1's figures kept, task 0's not (checkpoints stored before figures were have none).
  cp.task_figures = {
      {"1", "worker-" + std::to_string(id), cp.triggered_at_ms + 200, {5, 190, 3, 0}}};
  return cp;
}

// The commit of `cp` for the pipeline `r` describes: its key, retention and progress.
inline CheckpointCommit CommitOf(const PipelineRecord& r, CompletedCheckpoint cp) {
  return CheckpointCommit{r.spec.key, r.spec.retained, r.progress(), std::move(cp), {}};
}

// The bytes of a file (empty when it cannot be read).
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<int64_t> Ids(const std::vector<CompletedCheckpoint>& checkpoints) {
  std::vector<int64_t> ids;
  for (const auto& cp : checkpoints) ids.push_back(cp.checkpoint_id);
  return ids;
}

// Holds the writer thread inside a `done` callback until released, so that whatever is queued
// meanwhile lands in one batch. (Blocking in `done` is forbidden in production; here it is the
// point.)
class WriterGate {
 public:
  MetadataStore::Done Callback() {
    return [this](Status) {
      std::unique_lock lock(mu_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    };
  }
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kStoreTestDeadline, [&] { return entered_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool released_ = false;
};

}  // namespace ckpt
