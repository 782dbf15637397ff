// EtcdBackend::ApplyBatch, the write path's entry: whether the batch may be written at all (the
// fence set, the lease confirmed, the view loaded, the write cursor read, the groups loaded), then
// each op planned in call order against the view into the BatchWriter's fenced txns
// (etcd_batch_writer.cc). The record, progress, id counter, probe and group ops are planned here;
// checkpoint commits, group rounds and checkpoint deletes in etcd_commit_plan.cc. After a txn
// etcd refused, the view of what it touched is read back (RereadViewOf).
//
// Threading: GroupCommitStore's writer thread. ApplyBatch holds view_mu_ for the whole batch;
// the rereads run under it (CKPT_REQUIRES in etcd_backend.h).

#include "etcd/etcd_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "etcd/etcd_backend_internal.h"
#include "etcd/etcd_batch_writer.h"
#include "store/group_rules.h"

namespace ckpt {

using etcd_backend_internal::Delete;
using etcd_backend_internal::ParseCounter;
using etcd_backend_internal::Put;
using etcdserverpb::KeyValue;
using etcdserverpb::RangeRequest;
using etcdserverpb::RequestOp;

BatchResult EtcdBackend::ApplyBatch(const std::vector<WriteOp>& ops) {
  MutexLock lock(view_mu_);
  if (fence_revision_ == 0) {
    return BatchResult::NotWritten(
        Status::FailedPrecondition("this daemon does not lead; a standby writes nothing"));
  }
  if (may_write_ && !may_write_()) {
    // Not sent at all: its outcome is known. The leadership's lease is not confirmed (etcd
    // unreachable, or its quorum lost): a write now would likely hang until its deadline and
    // end with an unknown outcome.
    return BatchResult::NotWritten(Status::Unavailable(
        "etcd " + client_->endpoints_text() +
        " has not confirmed this leader's lease lately (unreachable, or quorum lost); nothing "
        "written"));
  }
  if (!view_loaded_) {
    // Nothing loaded yet (a store written before it was read): the view comes first, or a
    // commit could not tell a stored pipeline from a missing one.
    auto loaded = LoadView();
    if (!loaded.ok()) {
      if (loaded.status().code() == StatusCode::kDataLoss)
        return BatchResult::Stop(loaded.status());
      return BatchResult::NotWritten(Status::Unavailable("nothing written: reading etcd failed: " +
                                                         loaded.status().message()));
    }
  }
  if (!writer_known_) {
    // The write cursor, before this leadership's first txn (and before anything is planned):
    // if etcd cannot say, nothing has been sent, so the batch simply fails.
    auto writer = ReadWriter();
    if (!writer.ok()) {
      return BatchResult::NotWritten(Status::Unavailable(
          "nothing written: reading etcd's write cursor failed: " + writer.status().message()));
    }
    writer_revision_ = writer->mod_revision();
    writer_seq_ = 0;
    writer_known_ = true;
  }
  if (!groups_loaded_) {
    const bool any_group_op = std::any_of(ops.begin(), ops.end(), [](const WriteOp& op) {
      return std::holds_alternative<PutGroupOp>(op) || std::holds_alternative<DeleteGroupOp>(op) ||
             std::holds_alternative<ReserveGroupIdsOp>(op) ||
             std::holds_alternative<CommitGroupRoundOp>(op);
    });
    if (any_group_op) {
      if (Status s = LoadGroupView(); !s.ok()) {
        if (s.code() == StatusCode::kDataLoss) return BatchResult::Stop(s);
        return BatchResult::NotWritten(Status::Unavailable(
            "nothing written: reading the alignment groups failed: " + s.message()));
      }
    }
  }
  BatchWriter writer(*this, ops.size());
  auto& results = writer.results();
  // A refused txn (ha/etcd_outcomes.h) fails its ops; `planning` was being planned when the
  // refusal came, and failed with it when the refused txn held only its chunks. A refusal of the
  // request's own fails nothing more: the view is read again where the failed ops (and the one
  // being planned) changed it, and the batch goes on from `planning`. One of the store's fails
  // every op not yet written.
  auto after_refusal = [&](BatchWriter::Refusal refusal, size_t planning) -> bool {
    view_mu_.AssertHeld();  // called right here, under ApplyBatch's lock
    std::vector<size_t> failed;
    for (size_t op : refusal.ops) {
      if (op < ops.size()) failed.push_back(op);
    }
    if (failed.empty() && planning < ops.size()) failed.push_back(planning);
    std::vector<size_t> changed = failed;
    if (planning < ops.size()) changed.push_back(planning);
    for (size_t op : failed) results[op] = refusal.status;
    RereadViewOf(ops, changed);
    if (!refusal.store_wide) return true;
    for (size_t op = planning; op < ops.size(); ++op) results[op] = refusal.status;
    return false;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    bool ok = std::visit(
        [&](const auto& o) -> bool {
          view_mu_.AssertHeld();  // called right here, under ApplyBatch's lock
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, PutPipelineOp>) {
            const PipelineKey& key = o.record.spec.key;
            auto spec = etcd::EncodeSpec(o.record.spec);
            if (!spec.ok()) {
              results[i] = spec.status();
              return true;
            }
            if (spec->size() > kMaxTxnBytes - 4096) {
              results[i] = Status::InvalidArgument(
                  "the spec of " + key.ToString() + " is " + std::to_string(spec->size()) +
                  " bytes as stored, more than the etcd backend keeps in one value (" +
                  std::to_string(kMaxTxnBytes - 4096) + "); shorten its task ids or split it");
              return true;
            }
            pipelines_[key].has_record = true;
            return writer.Add(
                i, {Put(layout_.SpecKey(key), std::move(*spec)),
                    Put(layout_.ProgressKey(key), etcd::EncodeProgress(o.record.progress()))});
          } else if constexpr (std::is_same_v<T, PutProgressOp>) {
            auto it = pipelines_.find(o.key);
            if (it == pipelines_.end() || !it->second.has_record) return true;  // deleted
            return writer.Add(i,
                              {Put(layout_.ProgressKey(o.key), etcd::EncodeProgress(o.progress))});
          } else if constexpr (std::is_same_v<T, ReserveIdsOp>) {
            if (o.new_counter < 0) {
              results[i] = Status::InvalidArgument("id counter of " + o.key.ToString() +
                                                   " cannot be " + std::to_string(o.new_counter));
              return true;
            }
            int64_t& counter = counters_[o.key];
            if (o.new_counter <= counter) return true;  // never lowered
            counter = o.new_counter;
            return writer.Add(i, {Put(layout_.CounterKey(o.key), std::to_string(o.new_counter))},
                              /*alone=*/false, o.new_counter);
          } else if constexpr (std::is_same_v<T, CommitCheckpointOp>) {
            return PlanCommit(writer, i, o.commit);
          } else if constexpr (std::is_same_v<T, ProbeOp>) {
            return writer.Add(i, {Put(layout_.ProbeKey(), std::to_string(o.now_ms))});
          } else if constexpr (std::is_same_v<T, DeleteCheckpointsOp>) {
            return PlanDeleteCheckpoints(writer, i, o);
          } else if constexpr (std::is_same_v<T, PutGroupOp>) {
            if (Status s = CheckGroupName(o.spec.name); !s.ok()) {
              results[i] = std::move(s);
              return true;
            }
            StoredGroup& group = groups_[o.spec.name];
            group.spec = o.spec;
            group.from_config = o.from_config;
            return writer.Add(i, {Put(layout_.GroupKey(o.spec.name), etcd::EncodeGroup(group))});
          } else if constexpr (std::is_same_v<T, DeleteGroupOp>) {
            // Also one the view does not hold: a group whose value could not be read.
            groups_.erase(o.name);
            return writer.Add(i, {Delete(layout_.GroupKey(o.name))});
          } else if constexpr (std::is_same_v<T, ReserveGroupIdsOp>) {
            if (Status s = CheckGroupCounter(o.name, o.new_counter); !s.ok()) {
              results[i] = std::move(s);
              return true;
            }
            auto group = groups_.find(o.name);
            if (group == groups_.end()) {
              results[i] = Status::NotFound("alignment group " + o.name + " has no record");
              return true;
            }
            if (o.new_counter <= group->second.progress.id_counter) return true;  // never lowered
            group->second.progress.id_counter = o.new_counter;
            return writer.Add(i, {Put(layout_.GroupKey(o.name), etcd::EncodeGroup(group->second))},
                              /*alone=*/false, o.new_counter);
          } else if constexpr (std::is_same_v<T, CommitGroupRoundOp>) {
            return PlanGroupRound(writer, i, o.commit);
          } else {
            static_assert(std::is_same_v<T, DeletePipelineOp>);
            const PipelineKey& key = o.key;
            pipelines_.erase(key);
            const std::string records = layout_.PipelinePrefix(key);
            const std::string history = layout_.CheckpointPrefix(key);
            const std::string chunks = layout_.ChunksPrefix(key);
            std::vector<RequestOp> requests = {Delete(records, PrefixEnd(records)),
                                               Delete(history, PrefixEnd(history)),
                                               Delete(chunks, PrefixEnd(chunks))};
            if (o.unreadable) {
              // Its own counter may be what could not be read: the store's high-water mark
              // replaces it, so that a pipeline of this name starts above every id given.
              int64_t& counter = counters_[key];
              counter = std::max(counter, high_water_);
              requests.push_back(Put(layout_.CounterKey(key), std::to_string(counter)));
            }
            if (!writer.Add(i, std::move(requests), /*alone=*/true)) return false;
            writer.Publish(key, std::nullopt);
            return true;
          }
        },
        ops[i]);
    if (ok) continue;
    if (!writer.stop().ok()) break;
    auto refusal = writer.TakeRefusal();
    if (!refusal) break;
    const bool attributed_to_planning = std::none_of(refusal->ops.begin(), refusal->ops.end(),
                                                     [&](size_t op) { return op < ops.size(); });
    if (!after_refusal(std::move(*refusal), i)) break;
    // The op being planned is planned again (its view read afresh), unless it was the one
    // refused (a txn of its chunks alone).
    if (!attributed_to_planning) --i;
  }
  if (writer.stop().ok() && !writer.Send() && writer.stop().ok()) {
    if (auto refusal = writer.TakeRefusal()) after_refusal(std::move(*refusal), ops.size());
  }
  if (!writer.stop().ok()) {
    spdlog::critical("store: {}; stopping: a standby takes over from what etcd holds",
                     writer.stop().ToString());
    return BatchResult::Stop(writer.stop());
  }
  return BatchResult::Committed(std::move(results));
}

void EtcdBackend::RereadViewOf(const std::vector<WriteOp>& ops, const std::vector<size_t>& which) {
  std::set<PipelineKey> pipelines;
  std::set<std::string> groups;
  for (size_t i : which) {
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, PutPipelineOp>) {
            pipelines.insert(o.record.spec.key);
          } else if constexpr (std::is_same_v<T, CommitCheckpointOp>) {
            pipelines.insert(o.commit.key);
          } else if constexpr (std::is_same_v<T, PutGroupOp>) {
            groups.insert(o.spec.name);
          } else if constexpr (std::is_same_v<T, DeleteGroupOp> ||
                               std::is_same_v<T, ReserveGroupIdsOp>) {
            groups.insert(o.name);
          } else if constexpr (std::is_same_v<T, CommitGroupRoundOp>) {
            groups.insert(o.commit.group);
            for (const CheckpointCommit& member : o.commit.members) pipelines.insert(member.key);
          } else if constexpr (std::is_same_v<T, ProbeOp>) {
            // changes nothing of the view
          } else {
            pipelines.insert(o.key);  // progress, ids, deletes
          }
        },
        ops[i]);
  }
  Status s = Status::Ok();
  for (const PipelineKey& key : pipelines) {
    if (s.ok()) s = RereadPipelineView(key);
  }
  for (const std::string& name : groups) {
    if (s.ok()) s = RereadGroupView(name);
  }
  if (!s.ok()) {
    // The view may hold what was refused: the next batch loads it whole before it plans.
    spdlog::warn(
        "store {}: reading back what a refused transaction touched failed ({}); the "
        "next write reads the whole view first",
        name_, s.ToString());
    view_loaded_ = false;
    groups_loaded_ = false;
  }
}

Status EtcdBackend::RereadPipelineView(const PipelineKey& key) {
  int64_t revision = 0;  // every range below at the first one's revision
  auto records = RangeAll(layout_.PipelinePrefix(key), PrefixEnd(layout_.PipelinePrefix(key)),
                          /*keys_only=*/true, &revision);
  if (!records.ok()) return records.status();
  auto counter = RangeAll(layout_.CounterKey(key), "", /*keys_only=*/false, &revision);
  if (!counter.ok()) return counter.status();
  auto history = RangeAll(layout_.CheckpointPrefix(key), PrefixEnd(layout_.CheckpointPrefix(key)),
                          /*keys_only=*/true, &revision);
  if (!history.ok()) return history.status();
  PipelineView view;
  for (const KeyValue& kv : *records) {
    auto parsed = layout_.ParsePipelineKey(kv.key());
    if (parsed && parsed->is_spec) view.has_record = true;
  }
  std::vector<KeyValue> own;  // this pipeline's checkpoint keys that parse
  for (KeyValue& kv : *history) {
    auto ref = layout_.ParseCheckpointKey(kv.key());
    if (!ref || !(ref->key == key)) continue;
    (ref->kind == CheckpointKind::kCheckpoint ? view.checkpoint_ids : view.savepoint_ids)
        .insert(ref->id);
    if (ref->chunked) view.chunked[ref->id] = 1;
    own.push_back(std::move(kv));
  }
  if (auto newest = etcd::NewestCheckpoints(layout_, own); newest && !newest->empty()) {
    const KeyValue* kv = newest->begin()->second;
    auto value = ReadValues({kv->key()}, revision);
    if (!value.ok()) return value.status();
    auto stored = etcd::DecodeCheckpoint(value->front());
    if (!stored) return Status::DataLoss("unreadable checkpoint " + kv->key());
    view.retained_from = stored->horizon.retained_from;
    view.kept = stored->horizon.kept;
  }
  if (counter->empty()) {
    counters_.erase(key);
  } else {
    int64_t value = 0;
    if (!ParseCounter(counter->front().value(), &value)) {
      return Status::DataLoss("unreadable id counter " + counter->front().key());
    }
    counters_[key] = value;
  }
  const etcd::Horizon horizon = view.horizon();
  if (view.has_record || !view.checkpoint_ids.empty() || !view.savepoint_ids.empty()) {
    pipelines_[key] = std::move(view);
  } else {
    pipelines_.erase(key);
  }
  MutexLock horizon_lock(horizon_mu_);
  horizons_[key] = horizon;
  return Status::Ok();
}

Status EtcdBackend::RereadGroupView(const std::string& name) {
  if (!groups_loaded_) return Status::Ok();  // read whole before the next group write anyway
  RangeRequest request;
  request.set_key(layout_.GroupKey(name));
  auto response = client_->Range(request);
  if (!response.ok()) return response.status();
  if (response->kvs().empty()) {
    groups_.erase(name);
    return Status::Ok();
  }
  auto group = etcd::DecodeGroup(response->kvs(0).value(), name);
  if (!group) return Status::DataLoss("unreadable alignment group " + layout_.GroupKey(name));
  groups_[name] = std::move(*group);
  return Status::Ok();
}

}  // namespace ckpt
