// How the ops that write checkpoints become etcd requests: a commit (checked against the view,
// encoded, in chunks above kMaxValueBytes, with where the history starts after it and the trims
// then due), a group round (every member's commit and the group's value in one txn, the round's
// commit point), and a delete of checkpoints. Each plan updates the view at once, so that a later
// op of the batch sees it, and hands its requests to the BatchWriter.
//
// Threading: GroupCommitStore's writer thread, inside ApplyBatch (etcd_apply_batch.cc), under
// view_mu_ (CKPT_REQUIRES in etcd_backend.h).

#include "etcd/etcd_backend.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "etcd/etcd_backend_internal.h"
#include "etcd/etcd_batch_writer.h"
#include "store/group_rules.h"

namespace ckpt {

using etcd_backend_internal::Delete;
using etcd_backend_internal::Put;
using etcdserverpb::RequestOp;

namespace {

// Range deletes one commit may carry (a run between two savepoints, and its chunks): with the
// commit's own two puts, far below the least max_txn_ops (128).
constexpr int kMaxTrimsPerCommit = 32;

}  // namespace

bool EtcdBackend::PlanDeleteCheckpoints(BatchWriter& writer, size_t i,
                                        const DeleteCheckpointsOp& op) {
  auto it = pipelines_.find(op.key);
  if (it == pipelines_.end() || !it->second.has_record) {
    writer.results()[i] = Status::NotFound("pipeline " + op.key.ToString() + " has no record");
    return true;
  }
  PipelineView& view = it->second;
  int64_t newest = 0;
  if (!view.checkpoint_ids.empty()) newest = *view.checkpoint_ids.rbegin();
  if (!view.savepoint_ids.empty()) newest = std::max(newest, *view.savepoint_ids.rbegin());
  std::vector<RequestOp> requests;
  std::vector<int64_t> deleted;
  for (int64_t id : op.checkpoint_ids) {
    const bool plain =
        view.checkpoint_ids.count(id) > 0 && !view.horizon().Hides(id, CheckpointKind::kCheckpoint);
    if (!plain && !view.savepoint_ids.count(id)) continue;  // not in the history
    if (id == newest) {
      // Its value holds the pipeline's progress and where the history starts (etcd_layout.h).
      writer.results()[i] = Status::FailedPrecondition(
          "checkpoint " + std::to_string(id) + " of " + op.key.ToString() +
          " is the newest stored; the store keeps the pipeline's progress with it");
      return true;
    }
    deleted.push_back(id);
    // Every key of the id, whatever its kind and chunk marks.
    requests.push_back(
        Delete(layout_.CheckpointBound(op.key, id), layout_.CheckpointBound(op.key, id + 1)));
    if (view.chunked.count(id)) {
      const std::string chunks = layout_.ChunkPrefix(op.key, id);
      requests.push_back(Delete(chunks, PrefixEnd(chunks)));
    }
  }
  if (requests.empty()) return true;
  for (int64_t id : deleted) {  // the hidden ones skipped above stay for PlanTrim
    view.checkpoint_ids.erase(id);
    view.savepoint_ids.erase(id);
    view.chunked.erase(id);
  }
  return writer.Add(i, std::move(requests));
}

Status EtcdBackend::CheckCommit(const CheckpointCommit& commit) {
  const PipelineKey& key = commit.key;
  const CompletedCheckpoint& cp = commit.checkpoint;
  const std::string what =
      "checkpoint " + std::to_string(cp.checkpoint_id) + " of " + key.ToString();
  if (cp.checkpoint_id <= 0) return Status::InvalidArgument(what + ": ids start at 1");
  auto it = pipelines_.find(key);
  if (it == pipelines_.end() || !it->second.has_record) {
    return Status::NotFound(what + ": the pipeline has no record (deleted?)");
  }
  const PipelineView& view = it->second;
  if (view.checkpoint_ids.count(cp.checkpoint_id) || view.savepoint_ids.count(cp.checkpoint_id)) {
    return Status::AlreadyExists(what + " is already stored; not overwriting it");
  }
  if (cp.kind == CheckpointKind::kCheckpoint && cp.checkpoint_id < view.retained_from) {
    // Ids only grow; this one would be out of the history at once (and a trim could cover it).
    return Status::FailedPrecondition(what + " is older than the retained history (from " +
                                      std::to_string(view.retained_from) + ")");
  }
  return Status::Ok();
}

Result<EtcdBackend::PreparedCommit> EtcdBackend::PrepareCommit(PipelineView& view,
                                                               const CheckpointCommit& commit,
                                                               size_t max_value_bytes) {
  const CompletedCheckpoint& cp = commit.checkpoint;
  // Where the history starts after this commit: the `retained`-th newest checkpoint id, never
  // below where it started before (what left the history stays out of it).
  const size_t keep = static_cast<size_t>(std::max(commit.retained, 1));
  const bool is_checkpoint = cp.kind == CheckpointKind::kCheckpoint;
  auto& ids = is_checkpoint ? view.checkpoint_ids : view.savepoint_ids;
  ids.insert(cp.checkpoint_id);  // taken back by UndoPrepare, or below if it cannot be stored
  PreparedCommit prepared;
  prepared.retained_from = view.retained_from;
  if (is_checkpoint && view.checkpoint_ids.size() >= keep) {
    prepared.retained_from =
        std::max(prepared.retained_from, *std::next(view.checkpoint_ids.rbegin(), keep - 1));
  }
  // The restore points below where the history starts, which stay in it (commit.keep, sorted);
  // one the history no longer holds cannot come back.
  prepared.horizon = etcd::Horizon{prepared.retained_from, {}};
  for (int64_t id : commit.keep) {
    const bool held =
        view.checkpoint_ids.count(id) &&
        (id >= view.retained_from || std::binary_search(view.kept.begin(), view.kept.end(), id));
    if (held && id < prepared.retained_from) prepared.horizon.kept.push_back(id);
  }
  auto value = etcd::EncodeCheckpoint(cp, commit.progress_after, prepared.horizon, max_value_bytes,
                                      &prepared.chunks);
  if (!value.ok()) {
    ids.erase(cp.checkpoint_id);
    return Status::InvalidArgument("checkpoint " + std::to_string(cp.checkpoint_id) + " of " +
                                   commit.key.ToString() + ": " + value.status().message());
  }
  prepared.value = std::move(*value);
  return prepared;
}

void EtcdBackend::UndoPrepare(PipelineView& view, const CheckpointCommit& commit) {
  view.checkpoint_ids.erase(commit.checkpoint.checkpoint_id);
  view.savepoint_ids.erase(commit.checkpoint.checkpoint_id);
}

void EtcdBackend::FinishCommit(PipelineView& view, const CheckpointCommit& commit,
                               PreparedCommit prepared, bool may_trim,
                               std::vector<RequestOp>* requests) {
  const PipelineKey& key = commit.key;
  const CompletedCheckpoint& cp = commit.checkpoint;
  const bool chunked = !prepared.chunks.empty();
  // One put: the progress after the commit rides in the checkpoint's value (etcd_layout.h).
  requests->push_back(Put(layout_.CheckpointKey(key, cp.checkpoint_id, cp.kind, chunked),
                          std::move(prepared.value)));
  // Normally a no-op (the id came from a durably reserved block); if not, this still keeps the
  // id from being handed out again.
  int64_t& counter = counters_[key];
  if (cp.checkpoint_id > counter) {
    counter = cp.checkpoint_id;
    requests->push_back(Put(layout_.CounterKey(key), std::to_string(counter)));
  }
  if (chunked) view.chunked[cp.checkpoint_id] = static_cast<int>(prepared.chunks.size());
  view.retained_from = prepared.retained_from;
  view.kept = std::move(prepared.horizon.kept);
  // Out of the history but still stored: deleted once a few have piled up, so that most
  // commits are the one put.
  const size_t keep = static_cast<size_t>(std::max(commit.retained, 1));
  const auto out_of_history = static_cast<size_t>(std::distance(
      view.checkpoint_ids.begin(), view.checkpoint_ids.lower_bound(view.retained_from)));
  if (may_trim && out_of_history >= std::min<size_t>(keep, kTrimSlack) + view.kept.size()) {
    PlanTrim(key, view, requests);
  }
}

bool EtcdBackend::PlanCommit(BatchWriter& writer, size_t i, const CheckpointCommit& commit) {
  auto& results = writer.results();
  if (Status s = CheckCommit(commit); !s.ok()) {
    results[i] = std::move(s);
    return true;
  }
  const PipelineKey& key = commit.key;
  PipelineView& view = pipelines_.at(key);
  auto prepared = PrepareCommit(view, commit, kMaxValueBytes);
  if (!prepared.ok()) {
    results[i] = prepared.status();
    return true;
  }
  if (!prepared->chunks.empty() &&
      !writer.SendChunks(key, commit.checkpoint.checkpoint_id, prepared->chunks)) {
    return false;
  }
  // A load tells the progress in the checkpoint's value from the progress key by mod revision,
  // which is the same for every key of a txn: a progress written before it in this batch goes
  // in an earlier txn.
  if (writer.Puts(layout_.ProgressKey(key)) && !writer.Send()) return false;
  std::vector<RequestOp> requests;
  FinishCommit(view, commit, std::move(*prepared), /*may_trim=*/true, &requests);
  if (!writer.Add(i, std::move(requests), /*alone=*/false, counters_[key])) return false;
  writer.Publish(key, view.horizon());
  return true;
}

bool EtcdBackend::PlanGroupRound(BatchWriter& writer, size_t i, const GroupRoundCommit& commit) {
  auto& results = writer.results();
  const std::string what = "group round of alignment group " + commit.group;
  if (Status s = CheckGroupRound(commit); !s.ok()) {
    results[i] = std::move(s);
    return true;
  }
  auto group = groups_.find(commit.group);
  if (group == groups_.end()) {
    results[i] = Status::NotFound(what + ": the group has no record (deleted?)");
    return true;
  }
  for (const CheckpointCommit& member : commit.members) {
    if (Status s = CheckCommit(member); !s.ok()) {
      results[i] = Status(s.code(), what + ": " + s.message());
      return true;
    }
  }
  // Each member's value small enough that all of them fit the one txn that commits the round;
  // what does not fit goes in chunks first, which count only once that txn lands.
  const size_t members = std::max<size_t>(commit.members.size(), 1);
  const size_t value_budget = std::min(kMaxValueBytes, (kMaxTxnBytes - kGroupTxnSlack) / members);
  std::vector<PreparedCommit> prepared;
  prepared.reserve(commit.members.size());
  for (const CheckpointCommit& member : commit.members) {
    auto one = PrepareCommit(pipelines_.at(member.key), member, value_budget);
    if (!one.ok()) {
      for (size_t m = 0; m < prepared.size(); ++m) {
        UndoPrepare(pipelines_.at(commit.members[m].key), commit.members[m]);
      }
      results[i] = Status(one.status().code(), what + ": " + one.status().message());
      return true;
    }
    prepared.push_back(std::move(*one));
  }
  // The states fit the budget; the rest of each value (its progress, released ids, kept ids)
  // does not count in it. A round whose values still do not fit one txn is refused, not sent:
  // etcd would refuse it, and a refused txn stops the store.
  size_t txn_bytes = 0;
  for (const PreparedCommit& one : prepared) txn_bytes += one.value.size() + 1024;
  if (txn_bytes > kMaxTxnBytes - kGroupTxnSlack / 2) {
    for (size_t m = 0; m < prepared.size(); ++m) {
      UndoPrepare(pipelines_.at(commit.members[m].key), commit.members[m]);
    }
    results[i] = Status::InvalidArgument(
        what + ": its checkpoint values take " + std::to_string(txn_bytes) +
        " bytes, more than one etcd transaction holds (" + std::to_string(kMaxTxnBytes) + ")");
    return true;
  }
  for (size_t m = 0; m < prepared.size(); ++m) {
    const CheckpointCommit& member = commit.members[m];
    if (!prepared[m].chunks.empty() &&
        !writer.SendChunks(member.key, member.checkpoint.checkpoint_id, prepared[m].chunks)) {
      return false;
    }
  }
  for (const CheckpointCommit& member : commit.members) {
    if (writer.Puts(layout_.ProgressKey(member.key)) && !writer.Send()) return false;
  }
  std::vector<RequestOp> requests;
  for (size_t m = 0; m < prepared.size(); ++m) {
    const CheckpointCommit& member = commit.members[m];
    // Trims only while the txn has room for every member's two puts and the group's.
    const bool may_trim = requests.size() + 2 * (prepared.size() - m) + kMaxTrimsPerCommit + 8 <
                          static_cast<size_t>(max_txn_ops_);
    FinishCommit(pipelines_.at(member.key), member, std::move(prepared[m]), may_trim, &requests);
  }
  StoredGroup& stored = group->second;
  const int64_t counter = std::max(stored.progress.id_counter, commit.progress_after.id_counter);
  stored.progress = commit.progress_after;
  stored.progress.id_counter = counter;
  requests.push_back(Put(layout_.GroupKey(commit.group), etcd::EncodeGroup(stored)));
  int64_t highest = stored.progress.id_counter;
  for (const CheckpointCommit& member : commit.members) {
    highest = std::max(highest, counters_[member.key]);
  }
  if (!writer.Add(i, std::move(requests), /*alone=*/true, highest)) return false;
  for (const CheckpointCommit& member : commit.members) {
    writer.Publish(member.key, pipelines_.at(member.key).horizon());
  }
  return true;
}

void EtcdBackend::PlanTrim(const PipelineKey& key, PipelineView& view,
                           std::vector<RequestOp>* requests) {
  // Runs of ids below retained_from with no savepoint and no kept id among them, each one range
  // delete (and one more for their chunks, if any has some). Savepoints share the key prefix and
  // stay; so do the kept ones (restore points).
  int planned = 0;
  auto first_trimmable = [&view]() {
    auto it = view.checkpoint_ids.begin();
    while (it != view.checkpoint_ids.end() && *it < view.retained_from &&
           std::binary_search(view.kept.begin(), view.kept.end(), *it)) {
      ++it;
    }
    return it;
  };
  for (auto first = first_trimmable();
       first != view.checkpoint_ids.end() && *first < view.retained_from &&
       planned + 2 <= kMaxTrimsPerCommit;
       first = first_trimmable()) {
    const int64_t from = *first;
    int64_t to = view.retained_from;
    if (auto savepoint = view.savepoint_ids.upper_bound(from);
        savepoint != view.savepoint_ids.end()) {
      to = std::min(to, *savepoint);
    }
    if (auto kept = std::upper_bound(view.kept.begin(), view.kept.end(), from);
        kept != view.kept.end()) {
      to = std::min(to, *kept);
    }
    requests->push_back(
        Delete(layout_.CheckpointBound(key, from), layout_.CheckpointBound(key, to)));
    ++planned;
    auto chunked_from = view.chunked.lower_bound(from);
    auto chunked_to = view.chunked.lower_bound(to);
    if (chunked_from != chunked_to) {
      requests->push_back(Delete(layout_.ChunkPrefix(key, from), layout_.ChunkPrefix(key, to)));
      ++planned;
      view.chunked.erase(chunked_from, chunked_to);
    }
    view.checkpoint_ids.erase(view.checkpoint_ids.lower_bound(from),
                              view.checkpoint_ids.lower_bound(to));
  }
}

}  // namespace ckpt
