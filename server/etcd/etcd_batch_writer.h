#pragma once
// EtcdBackend::BatchWriter, the fenced writer: the planners (etcd_apply_batch.cc,
// etcd_commit_plan.cc) hand it each op's requests; it packs them into txns and sends each fenced
// (etcd_batch_writer.cc). Only EtcdBackend's own files include this.
//
// Threading: GroupCommitStore's writer thread, inside ApplyBatch, under view_mu_ (below).

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etcd/etcd_backend.h"
#include "ha/etcd_outcomes.h"

namespace ckpt {

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
  bool Add(size_t op_index, std::vector<etcdserverpb::RequestOp> requests, bool alone = false,
           int64_t counter = 0);

  // Where a pipeline's history starts once the pending txn (which holds the op just added) has
  // landed (nothing: the pipeline is deleted). Published to ListCompleted right after it lands,
  // so that a listing meanwhile shows at most one checkpoint too many, for that moment.
  void Publish(const PipelineKey& key, std::optional<etcd::Horizon> horizon) {
    horizons_.emplace_back(key, std::move(horizon));
  }

  // Whether the pending txn puts `key`.
  bool Puts(const std::string& key) const { return puts_.count(key) > 0; }

  // Sends what is pending; false once the batch must stop. How a txn is fenced, and what is
  // done when its answer is lost: at its definition (etcd_batch_writer.cc).
  bool Send();

  enum class Outcome { kLanded, kNotLanded, kUnknown, kLost };

  // Asks etcd (Resolve) until it says landed, lost, or not landed while the lease is confirmed
  // (then the txn may go again), pausing before each question; kUnknown once the window ends.
  // While the lease is unconfirmed nothing is sent again, only asked about: it is fenced anyway.
  Outcome AwaitOutcome(const std::string& token, std::chrono::steady_clock::time_point give_up_at,
                       int64_t* landed_at);

  // Whether txn `token` landed (then *landed_at is its revision), did not while this daemon
  // still leads (it may go again), could not be told (etcd unreachable), or the leadership is
  // gone.
  Outcome Resolve(const std::string& token, int64_t* landed_at);

  // Chunk values go first, in txns of their own, so that the manifest (the checkpoint key) that
  // makes them count is written after them.
  bool SendChunks(const PipelineKey& key, int64_t id, const std::vector<std::string>& chunks);

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
  void Refuse(HaAction action, const Status& etcd_said, size_t ops);

  // Whether `requests` put a key the pending txn puts or deletes, or delete one it puts.
  bool Overlaps(const std::vector<etcdserverpb::RequestOp>& requests) const;

  EtcdBackend& b_;
  std::vector<Status> results_;
  etcdserverpb::TxnRequest txn_;
  std::set<std::string> puts_;                                // keys the pending txn puts
  std::vector<std::pair<std::string, std::string>> deletes_;  // and the ranges it deletes
  std::vector<std::pair<PipelineKey, std::optional<etcd::Horizon>>>
      horizons_;  // of the pending txn
  size_t bytes_ = 0;
  bool alone_in_txn_ = false;
  std::vector<size_t> ops_in_txn_;
  Status stop_;
  std::optional<Refusal> refusal_;
  int64_t txn_high_water_ = 0;  // the highest counter the pending txn puts
  Status error_;                // the last failure while resolving an unknown outcome
};

}  // namespace ckpt
