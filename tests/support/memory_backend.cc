#include "support/memory_backend.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <variant>

#include "store/group_rules.h"

namespace ckpt {

BatchResult MemoryBackend::ApplyBatch(const std::vector<WriteOp>& ops) {
  std::unique_lock lock(mu_);
  // The plan is this batch's if it was made before the batch came in, even if the batch is then
  // held: a test may plan the outcome of the batch queued behind a held one.
  std::optional<BatchResult> outcome = std::exchange(next_outcome_, std::nullopt);
  std::optional<size_t> answer_count = std::exchange(next_answer_count_, std::nullopt);
  if (hold_) {
    holding_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !hold_; });
    holding_ = false;
  }
  batch_sizes_.push_back(ops.size());
  if (outcome) return std::move(*outcome);
  std::vector<Status> results;
  results.reserve(ops.size());
  for (const WriteOp& op : ops) results.push_back(Apply(op));
  if (answer_count) results.resize(*answer_count);
  return BatchResult::Committed(std::move(results));
}

Status MemoryBackend::Apply(const WriteOp& op) {
  // Each op checks everything before it changes anything: one that fails changes nothing.
  return std::visit(
      [this](const auto& o) -> Status {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, PutPipelineOp>) {
          records_[o.record.spec.key] = o.record;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, PutProgressOp>) {
          auto it = records_.find(o.key);
          if (it != records_.end()) static_cast<PipelineProgress&>(it->second) = o.progress;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, ReserveIdsOp>) {
          if (o.new_counter < 0) return Status::InvalidArgument("negative id counter");
          counters_[o.key] = std::max(counters_[o.key], o.new_counter);
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, CommitCheckpointOp>) {
          if (Status s = CheckCommit(o.commit); !s.ok()) return s;
          ApplyCommit(o.commit);
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, PutGroupOp>) {
          if (Status s = CheckGroupName(o.spec.name); !s.ok()) return s;
          StoredGroup& group = groups_[o.spec.name];
          group.spec = o.spec;
          group.from_config = o.from_config;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, DeleteGroupOp>) {
          groups_.erase(o.name);
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, ReserveGroupIdsOp>) {
          if (Status s = CheckGroupCounter(o.name, o.new_counter); !s.ok()) return s;
          auto group = groups_.find(o.name);
          if (group == groups_.end()) return Status::NotFound("no group " + o.name);
          group->second.progress.id_counter =
              std::max(group->second.progress.id_counter, o.new_counter);
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, CommitGroupRoundOp>) {
          if (Status s = CheckGroupRound(o.commit); !s.ok()) return s;
          auto group = groups_.find(o.commit.group);
          if (group == groups_.end()) return Status::NotFound("no group " + o.commit.group);
          for (const CheckpointCommit& member : o.commit.members) {
            if (Status s = CheckCommit(member); !s.ok()) return s;
          }
          for (const CheckpointCommit& member : o.commit.members) ApplyCommit(member);
          const int64_t counter =
              std::max(group->second.progress.id_counter, o.commit.progress_after.id_counter);
          group->second.progress = o.commit.progress_after;
          group->second.progress.id_counter = counter;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, ProbeOp>) {
          probe_ms_ = o.now_ms;
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, DeleteCheckpointsOp>) {
          if (!records_.count(o.key)) return Status::NotFound("no record of " + o.key.ToString());
          auto& history = history_[o.key];
          for (int64_t id : o.checkpoint_ids) history.erase(id);
          return Status::Ok();
        } else {
          static_assert(std::is_same_v<T, DeletePipelineOp>);
          records_.erase(o.key);
          history_.erase(o.key);
          return Status::Ok();
        }
      },
      op);
}

Status MemoryBackend::CheckCommit(const CheckpointCommit& c) const {
  const int64_t id = c.checkpoint.checkpoint_id;
  const std::string what = "checkpoint " + std::to_string(id) + " of " + c.key.ToString();
  if (id <= 0) return Status::InvalidArgument(what + ": ids start at 1");
  if (!records_.count(c.key)) {
    return Status::NotFound(what + ": the pipeline has no record (deleted?)");
  }
  auto history = history_.find(c.key);
  if (history != history_.end() && history->second.count(id)) {
    return Status::AlreadyExists(what + " is already stored");
  }
  return Status::Ok();
}

void MemoryBackend::ApplyCommit(const CheckpointCommit& c) {
  const int64_t id = c.checkpoint.checkpoint_id;
  static_cast<PipelineProgress&>(records_.at(c.key)) = c.progress_after;
  auto& history = history_[c.key];
  history[id] = c.checkpoint;
  counters_[c.key] = std::max(counters_[c.key], id);
  // Plain checkpoints beyond `retained` (at least the new one stays); savepoints stay.
  const size_t keep = static_cast<size_t>(std::max(c.retained, 1));
  std::vector<int64_t> plain;  // newest first
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    if (it->second.kind == CheckpointKind::kCheckpoint) plain.push_back(it->first);
  }
  for (size_t i = keep; i < plain.size(); ++i) {
    const bool spared = std::find(c.keep.begin(), c.keep.end(), plain[i]) != c.keep.end();
    if (!spared) history.erase(plain[i]);
  }
}

Result<std::vector<StoredGroup>> MemoryBackend::LoadGroups() {
  std::lock_guard lock(mu_);
  if (!read_failure_.ok()) return read_failure_;
  std::vector<StoredGroup> out;
  for (const auto& [name, group] : groups_) out.push_back(group);
  return out;
}

Result<std::vector<StoredPipeline>> MemoryBackend::LoadPipelines() {
  std::lock_guard lock(mu_);
  if (!read_failure_.ok()) return read_failure_;
  std::vector<StoredPipeline> out;
  for (const auto& [key, record] : records_) {
    auto counter = counters_.find(key);
    StoredPipeline& stored = out.emplace_back();
    stored.record = record;
    stored.id_counter = counter == counters_.end() ? 0 : counter->second;
    auto history = history_.find(key);
    if (history == history_.end()) continue;
    for (const auto& [id, checkpoint] : history->second) {
      stored.history.push_back({id, checkpoint.kind});
      if (id == record.last_completed_id) stored.newest = checkpoint;
    }
  }
  return out;
}

Result<int64_t> MemoryBackend::LoadIdCounter(const PipelineKey& key) {
  std::lock_guard lock(mu_);
  if (!read_failure_.ok()) return read_failure_;
  auto it = counters_.find(key);
  return it == counters_.end() ? int64_t{0} : it->second;
}

Result<std::vector<CompletedCheckpoint>> MemoryBackend::ListCompleted(const PipelineKey& key,
                                                                      int limit,
                                                                      int64_t before_id) {
  std::lock_guard lock(mu_);
  if (!read_failure_.ok()) return read_failure_;
  std::vector<CompletedCheckpoint> out;
  auto history = history_.find(key);
  if (history == history_.end()) return out;
  for (auto it = history->second.rbegin(); it != history->second.rend(); ++it) {
    if (before_id > 0 && it->first >= before_id) continue;
    if (limit > 0 && out.size() == static_cast<size_t>(limit)) break;
    out.push_back(it->second);
  }
  return out;
}

void MemoryBackend::HoldBatches() {
  std::lock_guard lock(mu_);
  hold_ = true;
}

void MemoryBackend::ReleaseBatches() {
  std::lock_guard lock(mu_);
  hold_ = false;
  cv_.notify_all();
}

bool MemoryBackend::WaitUntilABatchIsHeld(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return holding_; });
}

void MemoryBackend::EndNextBatchWith(BatchResult::Outcome outcome, Status status) {
  std::lock_guard lock(mu_);
  next_outcome_ = BatchResult{outcome, {}, std::move(status)};
}

void MemoryBackend::AnswerNextBatchWith(size_t count) {
  std::lock_guard lock(mu_);
  next_answer_count_ = count;
}

void MemoryBackend::FailReads(Status status) {
  std::lock_guard lock(mu_);
  read_failure_ = std::move(status);
}

std::vector<size_t> MemoryBackend::batch_sizes() const {
  std::lock_guard lock(mu_);
  return batch_sizes_;
}

}  // namespace ckpt
