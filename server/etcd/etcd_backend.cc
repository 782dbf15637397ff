#include "etcd/etcd_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>
#include <variant>

#include "core/printable.h"
#include "core/spec_validation.h"
#include "ha/etcd_outcomes.h"
#include "store/group_rules.h"

namespace ckpt {

using etcdserverpb::Compare;
using etcdserverpb::KeyValue;
using etcdserverpb::RangeRequest;
using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

namespace {

RequestOp Put(std::string key, std::string value) {
  RequestOp op;
  auto* put = op.mutable_request_put();
  put->set_key(std::move(key));
  put->set_value(std::move(value));
  return op;
}

RequestOp Delete(std::string key, std::string range_end = "") {
  RequestOp op;
  auto* del = op.mutable_request_delete_range();
  del->set_key(std::move(key));
  if (!range_end.empty()) del->set_range_end(std::move(range_end));
  return op;
}

size_t BytesOf(const RequestOp& op) { return op.ByteSizeLong() + 8; }

// A txn whose answer was lost is resolved (asked about, sent again) for up to this many request
// timeouts, pausing this long before each question: a member's death costs etcd an election
// (about a second) and the lost proposal its own request timeout.
constexpr int kResolveWindowPerTimeout = 3;
constexpr auto kResolvePause = std::chrono::milliseconds(100);
// Range deletes one commit may carry (a run between two savepoints, and its chunks): with the
// commit's own two puts, far below the least max_txn_ops (128).
constexpr int kMaxTrimsPerCommit = 32;

// A counter as the layout stores it: decimal, not negative.
bool ParseCounter(const std::string& text, int64_t* value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && *value >= 0;
}

}  // namespace

// One batch's transactions. Ops are planned in call order against the view (which each plan
// updates at once, so that a later op of the batch sees an earlier one), packed into the current
// txn, and the txn is sent when the next plan would not fit (operations, bytes, a key written
// twice) and at the end. Any failure after the first send stops the store (kStop): the view then
// no longer says what etcd holds, and only a restart, which reloads, may go on.
// A BatchWriter lives only inside ApplyBatch, which holds view_mu_ throughout: each method says
// so to the analysis (AssertHeld), which cannot follow the lock into this helper.
class EtcdBackend::BatchWriter {
 public:
  BatchWriter(EtcdBackend& backend, size_t op_count) : b_(backend), results_(op_count) {}

  // Adds one op's requests. The pending txn is sent first when they would not fit it, or would
  // touch a key it already writes (etcd refuses a txn that puts a key twice, or puts one that it
  // also deletes), or when either goes `alone`. False once the batch must stop (stop_ says why).
  // `counter`: the highest id counter `requests` put (0: none), which the store's high-water mark
  // (P/high_water) must reach in the same txn.
  bool Add(size_t op_index, std::vector<RequestOp> requests, bool alone = false,
           int64_t counter = 0) {
    b_.view_mu_.AssertHeld();
    size_t bytes = 0;
    for (const auto& r : requests) bytes += BytesOf(r);
    // Three operations of every txn are Send's own: the write cursor, the layout, the mark.
    if (!txn_.success().empty() &&
        (alone || alone_in_txn_ || Overlaps(requests) ||
         txn_.success_size() + static_cast<int>(requests.size()) > b_.max_txn_ops_ - 3 ||
         bytes_ + bytes > kMaxTxnBytes)) {
      if (!Send()) return false;
    }
    txn_high_water_ = std::max(txn_high_water_, counter);
    for (auto& r : requests) {
      if (r.has_request_put()) {
        puts_.insert(r.request_put().key());
      } else if (r.has_request_delete_range()) {
        const auto& d = r.request_delete_range();
        deletes_.emplace_back(d.key(), d.range_end());
      }
      *txn_.add_success() = std::move(r);
    }
    bytes_ += bytes;
    alone_in_txn_ = alone;
    ops_in_txn_.push_back(op_index);
    return true;
  }

  // Where a pipeline's history starts once the pending txn (which holds the op just added) has
  // landed (nothing: the pipeline is deleted). Published to ListCompleted right after it lands,
  // so that a listing meanwhile shows at most one checkpoint too many, for that moment.
  void Publish(const PipelineKey& key, std::optional<etcd::Horizon> horizon) {
    horizons_.emplace_back(key, std::move(horizon));
  }

  // Whether the pending txn puts `key`.
  bool Puts(const std::string& key) const { return puts_.count(key) > 0; }

  // Sends what is pending; false once the batch must stop.
  //
  // Every txn is fenced by the leadership (the leader key's create revision) and by the write
  // cursor P/writer (its mod revision as this leader last saw it), and rewrites the cursor with
  // its own number. So a txn whose answer is lost (a member died with the proposal, a deadline)
  // is resolved instead of ending the leadership: the cursor says whether it landed; if not, the
  // same txn goes again, and whichever copy lands first makes the other's compare fail. A member
  // of three lost is thus no reason to stop. What cannot be resolved while the lease is
  // confirmed, or within the resolve window, still stops the store (kStop).
  bool Send() {
    b_.view_mu_.AssertHeld();
    if (txn_.success().empty()) return true;
    const std::string token =
        std::to_string(b_.fence_revision_) + ":" + std::to_string(b_.writer_seq_ + 1);
    Compare* fence = txn_.add_compare();
    fence->set_key(b_.fence_key_);
    fence->set_target(Compare::CREATE);
    fence->set_result(Compare::EQUAL);
    fence->set_create_revision(b_.fence_revision_);
    Compare* cursor = txn_.add_compare();
    cursor->set_key(b_.layout_.WriterKey());
    cursor->set_target(Compare::MOD);
    cursor->set_result(Compare::EQUAL);
    cursor->set_mod_revision(b_.writer_revision_);
    *txn_.add_success() = Put(b_.layout_.WriterKey(), token);
    size_t ops = txn_.success_size() - 1;
    if (!b_.layout_stored_) {
      *txn_.add_success() = Put(b_.layout_.LayoutKey(), std::to_string(etcd::kLayoutVersion));
      --ops;
    }
    if (txn_high_water_ > b_.high_water_) {
      *txn_.add_success() = Put(b_.layout_.HighWaterKey(), std::to_string(txn_high_water_));
      --ops;
    }
    const auto give_up_at =
        std::chrono::steady_clock::now() + kResolveWindowPerTimeout * b_.request_timeout();
    int64_t landed_at = 0;
    for (int attempt = 1;; ++attempt) {
      TxnResponse response;
      EtcdError error;
      Outcome outcome;
      if (b_.client_->Txn(txn_, &response, &error)) {
        if (response.succeeded()) {
          landed_at = response.header().revision();
          break;
        }
        // Refused: by the cursor because an earlier copy landed, else by the fence (deposed).
        outcome = AwaitOutcome(token, give_up_at, &landed_at);
        if (outcome == Outcome::kNotLanded) outcome = Outcome::kLost;
      } else if (const HaAction action = ActionFor(ClassifyEtcdFailure(error.status));
                 action == HaAction::kFailRequest || action == HaAction::kFailNotWritable) {
        // Certainly not applied (ha/etcd_outcomes.h): etcd refused this request's shape (only
        // its rounds fail), or every write for now (space, rate: the rounds fail as "store not
        // writable", StoreHealth probes until etcd takes writes again). The store goes on.
        Refuse(action, error.status, ops);
        return false;
      } else {
        if (attempt == 1 || attempt % 10 == 0) {  // a bounded few lines, however long it takes
          spdlog::warn(
              "store {}: a transaction of {} operations has an unknown outcome ({}); "
              "asking etcd whether it landed (attempt {})",
              b_.name_, ops, error.status.message(), attempt);
        }
        error_ = error.status;
        outcome = AwaitOutcome(token, give_up_at, &landed_at);
      }
      if (outcome == Outcome::kLanded) break;
      if (outcome == Outcome::kLost) {
        stop_ = Status::FailedPrecondition(
            "leadership lost: the leader key " + b_.fence_key_ + " (revision " +
            std::to_string(b_.fence_revision_) +
            ") or etcd's write cursor moved under this daemon, so etcd refused its write");
        return false;
      }
      if (outcome == Outcome::kUnknown) {  // the window ended without an answer
        stop_ = Status(StatusCode::kDeadlineExceeded,
                       "a transaction of " + std::to_string(ops) +
                           " etcd operations has an unknown outcome: " + error_.message() +
                           (b_.may_write_ && !b_.may_write_()
                                ? " (and etcd has not confirmed the lease lately)"
                                : ""));
        return false;
      }
      // Not landed, and it cannot land late now: the cursor fences every copy. Again.
      b_.txns_resent_.fetch_add(1, std::memory_order_relaxed);
    }
    b_.writer_revision_ = landed_at;
    b_.layout_stored_ = true;
    b_.high_water_ = std::max(b_.high_water_, txn_high_water_);
    b_.writer_seq_ += 1;
    b_.txns_committed_.fetch_add(1, std::memory_order_relaxed);
    if (!horizons_.empty()) {
      MutexLock horizon_lock(b_.horizon_mu_);
      for (auto& [key, horizon] : horizons_) {
        if (horizon) {
          b_.horizons_[key] = std::move(*horizon);
        } else {
          b_.horizons_.erase(key);
        }
      }
      horizons_.clear();
    }
    ++sent_;
    txn_.Clear();
    puts_.clear();
    deletes_.clear();
    bytes_ = 0;
    alone_in_txn_ = false;
    ops_in_txn_.clear();
    txn_high_water_ = 0;
    return true;
  }

  enum class Outcome { kLanded, kNotLanded, kUnknown, kLost };

  // Asks etcd (Resolve) until it says landed, lost, or not landed while the lease is confirmed
  // (then the txn may go again), pausing before each question; kUnknown once the window ends.
  // While the lease is unconfirmed nothing is sent again, only asked about: it is fenced anyway.
  Outcome AwaitOutcome(const std::string& token, std::chrono::steady_clock::time_point give_up_at,
                       int64_t* landed_at) {
    b_.view_mu_.AssertHeld();
    while (std::chrono::steady_clock::now() < give_up_at) {
      std::this_thread::sleep_for(kResolvePause);  // the store's own thread, never a strand
      const Outcome outcome = Resolve(token, landed_at);
      if (outcome == Outcome::kLanded || outcome == Outcome::kLost) return outcome;
      if (outcome == Outcome::kNotLanded && (!b_.may_write_ || b_.may_write_())) return outcome;
    }
    return Outcome::kUnknown;
  }

  // Whether txn `token` landed (then *landed_at is its revision), did not while this daemon
  // still leads (it may go again), could not be told (etcd unreachable), or the leadership is
  // gone.
  Outcome Resolve(const std::string& token, int64_t* landed_at) {
    b_.view_mu_.AssertHeld();
    *landed_at = 0;
    auto writer = b_.ReadWriter();
    if (!writer.ok()) {
      error_ = writer.status();
      return Outcome::kUnknown;
    }
    if (writer->value() == token) {
      *landed_at = writer->mod_revision();
      return Outcome::kLanded;
    }
    if (writer->mod_revision() != b_.writer_revision_) return Outcome::kLost;
    auto fence = b_.ReadFenceRevision();
    if (!fence.ok()) {
      error_ = fence.status();
      return Outcome::kUnknown;
    }
    return *fence == b_.fence_revision_ ? Outcome::kNotLanded : Outcome::kLost;
  }

  // Chunk values go first, in txns of their own, so that the manifest (the checkpoint key) that
  // makes them count is written after them.
  bool SendChunks(const PipelineKey& key, int64_t id, const std::vector<std::string>& chunks) {
    b_.view_mu_.AssertHeld();
    if (!Send()) return false;
    for (size_t n = 0; n < chunks.size(); ++n) {
      if (!Add(SIZE_MAX, {Put(b_.layout_.ChunkKey(key, id, static_cast<int>(n)), chunks[n])})) {
        return false;
      }
    }
    ops_in_txn_.clear();  // chunks answer no op
    return Send();
  }

  std::vector<Status>& results() { return results_; }
  const Status& stop() const { return stop_; }

  // The last refusal (Send returned false, stop() OK): its status, whether it was the store's
  // (every write refused for now) or the request's own, and the ops of the refused txn. The
  // refused txn is dropped; the batch may go on with the next ops. Clears it.
  struct Refusal {
    Status status;
    bool store_wide = false;
    std::vector<size_t> ops;
  };
  std::optional<Refusal> TakeRefusal() { return std::exchange(refusal_, std::nullopt); }

 private:
  void Refuse(HaAction action, const Status& etcd_said, size_t ops) {
    b_.view_mu_.AssertHeld();
    Refusal refusal;
    refusal.store_wide = action == HaAction::kFailNotWritable;
    refusal.status =
        refusal.store_wide
            ? NotWritable(etcd_said)
            : Status::ResourceExhausted("etcd refused a transaction of " + std::to_string(ops) +
                                        " operations for its size or shape, nothing of it "
                                        "applied: " +
                                        etcd_said.message());
    refusal.ops = std::move(ops_in_txn_);
    refusal_ = std::move(refusal);
    uint64_t held_back = 0;
    if (b_.refusal_log_.Allow(LogThrottle::Clock::now(), &held_back)) {
      spdlog::error("store {}: {}{}", b_.name_, refusal_->status.message(),
                    held_back ? " (" + std::to_string(held_back) + " more refusals since)" : "");
    }
    // Nothing of the txn is sent again: what it planned is forgotten (the view is read again
    // where its ops changed it, ApplyBatch).
    txn_.Clear();
    puts_.clear();
    deletes_.clear();
    horizons_.clear();
    bytes_ = 0;
    alone_in_txn_ = false;
    ops_in_txn_.clear();
    txn_high_water_ = 0;
  }

  // Whether `requests` put a key the pending txn puts or deletes, or delete one it puts.
  bool Overlaps(const std::vector<RequestOp>& requests) const {
    for (const auto& r : requests) {
      if (r.has_request_put()) {
        const std::string& key = r.request_put().key();
        if (puts_.count(key)) return true;
        for (const auto& [from, to] : deletes_) {
          if (to.empty() ? key == from : (key >= from && key < to)) return true;
        }
      } else if (r.has_request_delete_range()) {
        const auto& d = r.request_delete_range();
        auto first = puts_.lower_bound(d.key());
        if (first != puts_.end() &&
            (d.range_end().empty() ? *first == d.key() : *first < d.range_end())) {
          return true;
        }
      }
    }
    return false;
  }

  EtcdBackend& b_;
  std::vector<Status> results_;
  TxnRequest txn_;
  std::set<std::string> puts_;                                // keys the pending txn puts
  std::vector<std::pair<std::string, std::string>> deletes_;  // and the ranges it deletes
  std::vector<std::pair<PipelineKey, std::optional<etcd::Horizon>>>
      horizons_;  // of the pending txn
  size_t bytes_ = 0;
  bool alone_in_txn_ = false;
  std::vector<size_t> ops_in_txn_;
  int sent_ = 0;
  Status stop_;
  std::optional<Refusal> refusal_;
  int64_t txn_high_water_ = 0;  // the highest counter the pending txn puts
  Status error_;                // the last failure while resolving an unknown outcome
};

EtcdBackend::EtcdBackend(std::shared_ptr<EtcdClient> client, std::function<bool()> may_write)
    : client_(std::move(client)),
      layout_(client_->settings().prefix),
      name_("etcd " + client_->endpoints_text() + " prefix " + client_->settings().prefix),
      may_write_(std::move(may_write)),
      max_txn_ops_(static_cast<int>(client_->settings().max_txn_ops)) {}

void EtcdBackend::StartWarming() {
  MutexLock lock(view_mu_);
  if (mirror_ || view_loaded_ || fence_revision_ != 0) return;
  mirror_ = std::make_unique<etcd::EtcdMirror>(client_, layout_, [this] { return ReadImage(); });
  mirror_->Start();
  MutexLock watching(watching_mu_);
  watching_ = mirror_.get();
}

std::string EtcdBackend::DescribeView() {
  MutexLock lock(view_mu_);
  auto ids = [](const std::set<int64_t>& set) {
    std::string text;
    for (int64_t id : set) text += " " + std::to_string(id);
    return text;
  };
  std::string text;
  for (const auto& [key, view] : pipelines_) {
    text += key.ToString() + (view.has_record ? " record" : " no record") + "; checkpoints" +
            ids(view.checkpoint_ids) + "; savepoints" + ids(view.savepoint_ids) + "; chunked " +
            std::to_string(view.chunked.size()) + "; retained from " +
            std::to_string(view.retained_from) + "\n";
  }
  for (const auto& [key, counter] : counters_) {
    text += key.ToString() + " counter " + std::to_string(counter) + "\n";
  }
  return text;
}

std::pair<uint64_t, uint64_t> EtcdBackend::warm_copy_progress() {
  MutexLock lock(watching_mu_);
  if (!watching_) return {0, 0};
  return {watching_->loads(), watching_->events_applied()};
}

void EtcdBackend::SetFence(std::string leader_key, int64_t leader_revision) {
  MutexLock lock(view_mu_);
  fence_key_ = std::move(leader_key);
  fence_revision_ = leader_revision;
  writer_known_ = false;  // read afresh before this leadership's first txn
}

Status EtcdBackend::CheckTxnLimit() {
  // As many reads of one key as a full batch's txn carries operations (etcd counts each branch of
  // a txn against --max-txn-ops alike): refused for its size or taken, nothing written.
  TxnRequest txn;
  for (int i = 0; i < max_txn_ops_; ++i) {
    RangeRequest* read = txn.add_success()->mutable_request_range();
    read->set_key(layout_.LayoutKey());
    read->set_count_only(true);
  }
  TxnResponse response;
  EtcdError error;
  if (client_->Txn(txn, &response, &error)) return Status::Ok();
  if (error.failure == EtcdFailure::kNotApplied &&
      error.status.code() == StatusCode::kInvalidArgument) {
    return Status::FailedPrecondition(
        "etcd refused a transaction of " + std::to_string(max_txn_ops_) +
        " operations (store.etcd.max_txn_ops): " + error.status.message() +
        ". Start every etcd member with --max-txn-ops " + std::to_string(max_txn_ops_) +
        " or more, or lower store.etcd.max_txn_ops to the members' value (etcd's default: 128)");
  }
  return Status::Unavailable("checking that etcd takes transactions of " +
                             std::to_string(max_txn_ops_) +
                             " operations: " + error.status.message());
}

std::chrono::milliseconds EtcdBackend::request_timeout() const {
  return std::chrono::milliseconds(client_->settings().request_timeout_ms);
}

Result<KeyValue> EtcdBackend::ReadWriter() {
  RangeRequest request;
  request.set_key(layout_.WriterKey());
  auto response = client_->Range(request);
  if (!response.ok()) return response.status();
  if (response->kvs().empty()) return KeyValue();  // never written: mod revision 0
  return response->kvs(0);
}

Result<int64_t> EtcdBackend::ReadFenceRevision() {
  RangeRequest request;
  request.set_key(fence_key_);
  auto response = client_->Range(request);
  if (!response.ok()) return response.status();
  return response->kvs().empty() ? int64_t{0} : response->kvs(0).create_revision();
}

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

Result<std::vector<KeyValue>> EtcdBackend::RangeAll(const std::string& key,
                                                    const std::string& range_end, bool keys_only,
                                                    int64_t* revision) {
  std::vector<KeyValue> all;
  RangeRequest request;
  request.set_key(key);
  request.set_range_end(range_end);
  request.set_keys_only(keys_only);
  // Values may be up to kMaxValueBytes: a page stays well under the channel's receive limit.
  request.set_limit(keys_only ? 10000 : 64);
  request.set_revision(*revision);
  while (true) {
    auto page = client_->Range(request);
    if (!page.ok()) return page.status();
    if (*revision == 0) {
      *revision = page->header().revision();
      request.set_revision(*revision);
    }
    for (auto& kv : *page->mutable_kvs()) all.push_back(std::move(kv));
    if (!page->more() || page->kvs().empty()) break;
    request.set_key(all.back().key() + std::string(1, '\0'));
  }
  return all;
}

Result<std::vector<std::string>> EtcdBackend::ReadValues(const std::vector<std::string>& keys,
                                                         int64_t revision) {
  // A few dozen a txn: values may be up to kMaxValueBytes, and an answer stays well under the
  // channel's receive limit.
  constexpr size_t kReadsPerTxn = 64;
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (size_t first = 0; first < keys.size(); first += kReadsPerTxn) {
    TxnRequest txn;
    const size_t last = std::min(keys.size(), first + kReadsPerTxn);
    for (size_t k = first; k < last; ++k) {
      RangeRequest* range = txn.add_success()->mutable_request_range();
      range->set_key(keys[k]);
      range->set_revision(revision);
    }
    TxnResponse response;
    EtcdError error;
    if (!client_->Txn(txn, &response, &error)) return error.status;
    if (response.responses_size() != static_cast<int>(last - first)) {
      return Status::Internal("etcd answered " + std::to_string(response.responses_size()) +
                              " reads of " + std::to_string(last - first));
    }
    for (size_t k = first; k < last; ++k) {
      const auto& kvs = response.responses(static_cast<int>(k - first)).response_range().kvs();
      if (kvs.empty()) {
        return Status::Internal(keys[k] + " is gone at revision " + std::to_string(revision));
      }
      values.push_back(kvs[0].value());
    }
  }
  return values;
}

Result<std::vector<StoredPipeline>> EtcdBackend::LoadPipelines() {
  MutexLock lock(view_mu_);
  return LoadView();
}

Result<etcd::StoreImage> EtcdBackend::ReadImage() {
  etcd::StoreImage image;
  int64_t revision = 0;  // every range below reads the store at the first one's revision
  auto records = RangeAll(layout_.PipelinesPrefix(), PrefixEnd(layout_.PipelinesPrefix()),
                          /*keys_only=*/false, &revision);
  if (!records.ok()) return records.status();
  auto counters = RangeAll(layout_.CountersPrefix(), PrefixEnd(layout_.CountersPrefix()),
                           /*keys_only=*/false, &revision);
  if (!counters.ok()) return counters.status();
  auto history = RangeAll(layout_.CheckpointsPrefix(), PrefixEnd(layout_.CheckpointsPrefix()),
                          /*keys_only=*/true, &revision);
  if (!history.ok()) return history.status();
  auto layout = RangeAll(layout_.LayoutKey(), "", /*keys_only=*/false, &revision);
  if (!layout.ok()) return layout.status();
  auto writer = RangeAll(layout_.WriterKey(), "", /*keys_only=*/true, &revision);
  if (!writer.ok()) return writer.status();
  auto high_water = RangeAll(layout_.HighWaterKey(), "", /*keys_only=*/false, &revision);
  if (!high_water.ok()) return high_water.status();
  // Every other key but the chunks (keys only): the ranges between the prefixes read above,
  // where election keys, groups, singletons and keys no ckptd wrote sit.
  const std::string root = layout_.Root();
  const std::pair<std::string, std::string> gaps[] = {
      {root, layout_.CheckpointsPrefix()},
      {PrefixEnd(layout_.CheckpointsPrefix()), layout_.ChunksRoot()},
      {PrefixEnd(layout_.ChunksRoot()), layout_.CountersPrefix()},
      {PrefixEnd(layout_.CountersPrefix()), layout_.PipelinesPrefix()},
      {PrefixEnd(layout_.PipelinesPrefix()), PrefixEnd(root)},
  };
  for (const auto& [from, to] : gaps) {
    auto others = RangeAll(from, to, /*keys_only=*/true, &revision);
    if (!others.ok()) return others.status();
    for (const KeyValue& kv : *others) image.others.push_back(kv.key());
  }
  image.revision = revision;
  image.writer_revision = writer->empty() ? 0 : writer->front().mod_revision();
  image.records = std::move(*records);
  image.counters = std::move(*counters);
  image.history = std::move(*history);
  if (!layout->empty()) image.layout = layout->front().value();
  if (!high_water->empty()) image.high_water = high_water->front().value();
  // The newest write of each pipeline among the keys that parse (BuildView says which do not).
  std::vector<KeyValue> known;
  for (const KeyValue& kv : image.history) {
    if (layout_.ParseCheckpointKey(kv.key())) known.push_back(kv);
  }
  auto newest = etcd::NewestCheckpoints(layout_, known);
  if (!newest) return image;  // cannot happen: only keys that parse
  std::vector<std::string> newest_keys;
  for (const auto& [key, kv] : *newest) newest_keys.push_back(kv->key());
  auto newest_values = ReadValues(newest_keys, revision);
  if (!newest_values.ok()) return newest_values.status();
  for (size_t k = 0; k < newest_keys.size(); ++k) {
    image.newest_values[newest_keys[k]] = std::move((*newest_values)[k]);
  }
  return image;
}

Result<std::vector<StoredPipeline>> EtcdBackend::LoadView() {
  view_loaded_ = false;
  const auto began = std::chrono::steady_clock::now();
  std::optional<etcd::StoreImage> image;
  if (mirror_) {
    // A standby's warm copy, once it has seen the last write of every earlier leader (the write
    // cursor, read now): nothing to read again.
    auto writer = ReadWriter();
    // No cursor (a prefix nothing fenced has written to): nothing to tell the copy is current by.
    if (writer.ok() && writer->mod_revision() > 0) {
      image = mirror_->Take(writer->mod_revision(), kWarmWait);
    }
    {
      MutexLock watching(watching_mu_);
      watching_ = nullptr;
    }
    mirror_.reset();
  }
  const bool warm = image.has_value();
  if (!warm) {
    auto read = ReadImage();
    if (!read.ok()) return read.status();
    image = std::move(*read);
  }
  last_load_warm_.store(warm, std::memory_order_relaxed);
  auto loaded = BuildView(*image);
  if (loaded.ok()) {
    spdlog::info(
        "store: loaded {} pipeline(s), {} id counter(s), {} checkpoint(s) from {} at revision {} "
        "({}, {} ms)",
        loaded->size(), counters_.size(), image->history.size(), name_, image->revision,
        warm ? "the standby's watched copy" : "read from etcd",
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                              began)
            .count());
  }
  return loaded;
}

Result<std::vector<StoredPipeline>> EtcdBackend::BuildView(const etcd::StoreImage& image) {
  const std::string where = name_;
  const std::string known = std::to_string(etcd::kLayoutVersion);
  if (image.layout && *image.layout != known) {
    // The layout as a whole: nothing of it can be trusted (exit 65, ha/etcd_outcomes.h).
    return Status::DataLoss("the data in " + where + " has layout " + *image.layout + " (" +
                            layout_.LayoutKey() + "); this ckptd reads layout " + known +
                            ": a newer ckptd wrote it. Run that version or a later one on every "
                            "daemon of the group");
  }
  layout_stored_ = image.layout.has_value();
  pipelines_.clear();
  counters_.clear();
  // A record that does not read or validate quarantines its pipeline alone; a key this ckptd
  // does not know is passed over. Both are reported (UnreadableRecords) and said once each.
  std::map<PipelineKey, std::string> damaged;  // the first reason of each
  std::vector<UnreadableRecord> unknown;
  auto damage = [&](const PipelineKey& key, std::string why) { damaged.emplace(key, why); };
  auto unknown_key = [&](const std::string& key) {
    UnreadableRecord record;
    record.kind = UnreadableRecord::Kind::kUnknownKey;
    record.reason = Printable(key) + " in " + where + ": a key this ckptd does not know (ignored)";
    unknown.push_back(std::move(record));
  };
  int64_t high_water = 0;
  if (image.high_water && !ParseCounter(*image.high_water, &high_water)) {
    return Status::DataLoss("the ids' high-water mark " + layout_.HighWaterKey() + " in " + where +
                            " is not a number; ids could be handed out twice");
  }
  std::set<PipelineKey> counter_unreadable;
  for (const KeyValue& kv : image.counters) {
    auto key = layout_.ParseCounterKey(kv.key());
    int64_t value = 0;
    if (!key) {
      unknown_key(kv.key());
    } else if (!ParseCounter(kv.value(), &value)) {
      counter_unreadable.insert(*key);
      damage(*key, "id counter " + Printable(kv.key()) + ": not a number");
    } else {
      counters_[*key] = value;
      high_water = std::max(high_water, value);
    }
  }
  for (const std::string& key : image.others) {
    if (!layout_.IsKnownKey(key)) unknown_key(key);
  }
  struct Parts {
    std::optional<PipelineSpec> spec;
    std::optional<PipelineProgress> progress;
    int64_t progress_revision = 0;  // its key's mod revision
  };
  std::map<PipelineKey, Parts> parts;
  for (const KeyValue& kv : image.records) {
    auto parsed = layout_.ParsePipelineKey(kv.key());
    if (!parsed) {
      unknown_key(kv.key());
      continue;
    }
    Parts& part = parts[parsed->key];
    if (parsed->is_spec) {
      part.spec = etcd::DecodeSpec(kv.value(), parsed->key);
      if (!part.spec) damage(parsed->key, "spec " + Printable(kv.key()) + ": does not parse");
    } else {
      part.progress = etcd::DecodeProgress(kv.value());
      if (!part.progress) {
        damage(parsed->key, "progress " + Printable(kv.key()) + ": does not parse");
      }
      part.progress_revision = kv.mod_revision();
    }
  }
  // Each pipeline's newest checkpoint write: its value says where the history starts, and holds
  // the progress when it is newer than the progress key (etcd_layout.h).
  std::map<PipelineKey, std::vector<HistoryEntry>> histories;
  std::map<PipelineKey, CompletedCheckpoint> newest_checkpoints;  // with their task states
  std::vector<KeyValue> known_history;
  for (const KeyValue& kv : image.history) {
    auto ref = layout_.ParseCheckpointKey(kv.key());
    if (!ref) {
      unknown_key(kv.key());
      continue;
    }
    known_history.push_back(kv);
    PipelineView& view = pipelines_[ref->key];
    (ref->kind == CheckpointKind::kCheckpoint ? view.checkpoint_ids : view.savepoint_ids)
        .insert(ref->id);
    histories[ref->key].push_back({ref->id, ref->kind});  // keys sort in id order
    if (ref->chunked) view.chunked[ref->id] = 1;          // the count matters only for reading
    high_water = std::max(high_water, ref->id);
  }
  auto newest = etcd::NewestCheckpoints(layout_, known_history);
  if (!newest) return Status::Internal("a checkpoint key that parsed did not parse again");
  for (const auto& [key, kv] : *newest) {
    auto value = image.newest_values.find(kv->key());
    if (value == image.newest_values.end()) {
      return Status::Internal("the value of " + kv->key() + " was not read");
    }
    auto stored = etcd::DecodeCheckpoint(value->second);
    if (!stored) {
      damage(key, "checkpoint " + Printable(kv->key()) + ": does not parse");
      continue;
    }
    pipelines_[key].retained_from = stored->horizon.retained_from;
    pipelines_[key].kept = stored->horizon.kept;
    if (stored->chunks > 0) {
      // The restore point's states, in chunks a warm copy does not hold: read them now (the
      // fence is ours, so the newest revision is the one loaded).
      auto ref = layout_.ParseCheckpointKey(kv->key());
      if (Status read =
              ReadChunks(*ref, kv->key(), stored->chunks, /*revision=*/0, &stored->checkpoint);
          !read.ok()) {
        if (read.code() != StatusCode::kDataLoss) return read;
        damage(key, read.message());
        continue;
      }
    }
    newest_checkpoints[key] = std::move(stored->checkpoint);
    auto part = parts.find(key);
    if (part != parts.end() && stored->progress &&
        kv->mod_revision() > part->second.progress_revision) {
      part->second.progress = stored->progress;
    }
  }
  std::vector<StoredPipeline> loaded;
  std::vector<UnreadableRecord> unreadable;
  for (auto& [key, part] : parts) {
    auto& [spec, progress, progress_revision] = part;
    if (!damaged.count(key) && (!spec || !progress)) {
      damage(key, std::string("it has ") + (spec ? "no progress" : "no spec") + " record");
    }
    StoredPipeline stored;
    if (!damaged.count(key)) {
      static_cast<PipelineProgress&>(stored.record) = *progress;
      stored.record.spec = std::move(*spec);
      stored.id_counter = counters_.count(key) ? counters_[key] : 0;
      const etcd::Horizon horizon = pipelines_[key].horizon();
      stored.retained_from = horizon.retained_from;
      for (const HistoryEntry& entry : histories[key]) {
        if (!horizon.Hides(entry.checkpoint_id, entry.kind)) stored.history.push_back(entry);
      }
      auto newest_checkpoint = newest_checkpoints.find(key);
      if (newest_checkpoint != newest_checkpoints.end() &&
          newest_checkpoint->second.checkpoint_id == stored.record.last_completed_id) {
        stored.newest = std::move(newest_checkpoint->second);
      }
      if (Status s = ValidateStored(stored); !s.ok()) {
        damage(key, "not valid: " + s.message());
      } else if (!histories[key].empty() &&
                 histories[key].back().checkpoint_id > stored.id_counter) {
        // An id above the counter would be handed out again.
        damage(key, "checkpoint " + std::to_string(histories[key].back().checkpoint_id) +
                        " is above its id counter " + std::to_string(stored.id_counter));
      }
    }
    pipelines_[key].has_record = true;  // so that its delete is planned like any other
    if (auto why = damaged.find(key); why != damaged.end()) {
      UnreadableRecord record;
      record.pipeline = key;
      if (spec) record.group = spec->alignment_group;
      record.reason = "pipeline " + Printable(key.ToString()) + " in " + where + ": " + why->second;
      unreadable.push_back(std::move(record));
      continue;
    }
    loaded.push_back(std::move(stored));
  }
  // A counter or history of a pipeline with no record at all (its spec and progress gone): its
  // ids are kept from being handed out again (the high-water mark), and a counter that does not
  // read is reported.
  for (const PipelineKey& key : counter_unreadable) {
    if (parts.count(key)) continue;
    UnreadableRecord record;
    record.pipeline = key;
    record.reason = "pipeline " + Printable(key.ToString()) + " in " + where + ": " + damaged[key];
    unreadable.push_back(std::move(record));
  }
  for (const UnreadableRecord& record : unreadable) {
    spdlog::error("store: {} is quarantined (UNREADABLE; every other pipeline runs): {}",
                  Printable(record.pipeline.ToString()), record.reason);
  }
  for (const UnreadableRecord& record : unknown) {
    spdlog::warn("store: {}", record.reason);
  }
  unreadable.insert(unreadable.end(), unknown.begin(), unknown.end());
  {
    MutexLock unreadable_lock(unreadable_mu_);
    unreadable_pipelines_ = std::move(unreadable);
  }
  high_water_ = std::max(high_water_, high_water);
  {
    MutexLock horizon_lock(horizon_mu_);
    horizons_.clear();
    for (const auto& [key, view] : pipelines_) horizons_[key] = view.horizon();
  }
  view_loaded_ = true;
  return loaded;
}

Result<std::vector<StoredGroup>> EtcdBackend::ReadGroups() {
  int64_t revision = 0;
  auto kvs = RangeAll(layout_.GroupsPrefix(), PrefixEnd(layout_.GroupsPrefix()),
                      /*keys_only=*/false, &revision);
  if (!kvs.ok()) return kvs.status();
  std::vector<StoredGroup> groups;
  std::vector<UnreadableRecord> unreadable;
  for (const KeyValue& kv : *kvs) {
    const std::string name = kv.key().substr(layout_.GroupsPrefix().size());
    auto group = etcd::DecodeGroup(kv.value(), name);
    if (!group) {
      // The group alone is quarantined (its members wait for it).
      UnreadableRecord record;
      record.kind = UnreadableRecord::Kind::kGroup;
      record.group = name;
      record.reason =
          "alignment group " + Printable(kv.key()) + " in " + name_ + ": does not parse";
      spdlog::error("store: alignment group {} is quarantined (UNREADABLE): {}", Printable(name),
                    record.reason);
      unreadable.push_back(std::move(record));
      continue;
    }
    groups.push_back(std::move(*group));
  }
  MutexLock unreadable_lock(unreadable_mu_);
  unreadable_groups_ = std::move(unreadable);
  return groups;  // in key order: name order
}

Result<std::vector<StoredGroup>> EtcdBackend::LoadGroups() { return ReadGroups(); }

Status EtcdBackend::LoadGroupView() {
  auto groups = ReadGroups();
  if (!groups.ok()) return groups.status();
  groups_.clear();
  for (StoredGroup& group : *groups) {
    std::string name = group.spec.name;
    groups_.emplace(std::move(name), std::move(group));
  }
  groups_loaded_ = true;
  return Status::Ok();
}

std::vector<UnreadableRecord> EtcdBackend::UnreadableRecords() {
  MutexLock lock(unreadable_mu_);
  std::vector<UnreadableRecord> all = unreadable_pipelines_;
  all.insert(all.end(), unreadable_groups_.begin(), unreadable_groups_.end());
  return all;
}

size_t EtcdBackend::unreadable_seen_by_standby() {
  MutexLock lock(watching_mu_);
  return watching_ ? watching_->unreadable() : 0;
}

Result<int64_t> EtcdBackend::LoadIdCounter(const PipelineKey& key) {
  RangeRequest request;
  request.set_key(layout_.CounterKey(key));
  auto response = client_->Range(request);
  if (!response.ok()) return response.status();
  if (response->kvs().empty()) return int64_t{0};
  int64_t value = 0;
  if (ParseCounter(response->kvs(0).value(), &value)) return value;
  // A counter that does not read: nothing below the store's high-water mark is safe to hand out,
  // so the pipeline goes on above it.
  RangeRequest high_water;
  high_water.set_key(layout_.HighWaterKey());
  auto mark = client_->Range(high_water);
  if (!mark.ok()) return mark.status();
  int64_t floor = 0;
  if (!mark->kvs().empty() && !ParseCounter(mark->kvs(0).value(), &floor)) {
    return Status::DataLoss("the ids' high-water mark " + high_water.key() + " in " + name_ +
                            " is not a number");
  }
  spdlog::warn(
      "store: the id counter {} in {} is not a number; ids go on above the store's "
      "high-water mark {}",
      Printable(request.key()), name_, floor);
  return floor;
}

Status EtcdBackend::ReadChunks(const etcd::Layout::CheckpointRef& ref, const std::string& key,
                               int count, int64_t revision, CompletedCheckpoint* checkpoint) {
  RangeRequest chunks;
  const std::string prefix = layout_.ChunkPrefix(ref.key, ref.id);
  chunks.set_key(prefix);
  chunks.set_range_end(PrefixEnd(prefix));
  chunks.set_revision(revision);
  auto parts = client_->Range(chunks);
  if (!parts.ok()) return parts.status();
  if (parts->kvs_size() != count) {
    return Status::Internal("checkpoint " + key + " in " + name_ + " names " +
                            std::to_string(count) + " chunks; " +
                            std::to_string(parts->kvs_size()) + " are stored");
  }
  for (const KeyValue& part : parts->kvs()) {
    if (!etcd::DecodeChunk(part.value(), &checkpoint->task_states, &checkpoint->task_figures)) {
      return Status::Internal("unreadable chunk " + part.key() + " in " + name_);
    }
  }
  return Status::Ok();
}

Result<std::vector<CompletedCheckpoint>> EtcdBackend::ListCompleted(const PipelineKey& key,
                                                                    int limit, int64_t before_id) {
  etcd::Horizon horizon;  // what it hides is out of the history, stored or not
  {
    MutexLock lock(horizon_mu_);
    auto it = horizons_.find(key);
    if (it != horizons_.end()) horizon = it->second;
  }
  const std::string prefix = layout_.CheckpointPrefix(key);
  RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(before_id > 0 ? layout_.CheckpointBound(key, before_id)
                                      : PrefixEnd(prefix));
  request.set_sort_order(RangeRequest::DESCEND);
  request.set_sort_target(RangeRequest::KEY);
  std::vector<CompletedCheckpoint> out;
  // Page by page (newest first, at the first page's revision) until `limit` are found in the
  // history: the ones out of it that are not deleted yet are skipped.
  while (true) {
    if (limit > 0) request.set_limit(limit - static_cast<int>(out.size()));
    auto response = client_->Range(request);
    if (!response.ok()) return response.status();
    if (request.revision() == 0) request.set_revision(response->header().revision());
    for (const KeyValue& kv : response->kvs()) {
      auto ref = layout_.ParseCheckpointKey(kv.key());
      if (!ref) return Status::Internal("unknown key " + kv.key() + " in " + name_);
      if (horizon.Hides(ref->id, ref->kind)) continue;
      auto stored = etcd::DecodeCheckpoint(kv.value());
      if (!stored) return Status::Internal("unreadable checkpoint " + kv.key() + " in " + name_);
      if (stored->chunks > 0) {
        Status read =
            ReadChunks(*ref, kv.key(), stored->chunks, request.revision(), &stored->checkpoint);
        if (!read.ok()) return read;
      }
      out.push_back(std::move(stored->checkpoint));
    }
    const bool full = limit > 0 && out.size() >= static_cast<size_t>(limit);
    if (full || !response->more() || response->kvs().empty()) break;
    request.set_range_end(response->kvs().rbegin()->key());  // below the last one seen
  }
  return out;
}

}  // namespace ckpt
