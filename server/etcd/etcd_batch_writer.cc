// The fenced writer: EtcdBackend::BatchWriter's methods (etcd_batch_writer.h), which pack one
// batch's requests into txns, send each fenced by the leadership and by the write cursor, resolve
// a txn whose answer was lost (landed, or sent again), and turn what etcd refused into the
// batch's outcome; and the reads of the cursor and of the fence that this rests on.
//
// Threading: GroupCommitStore's writer thread, inside ApplyBatch, which holds view_mu_ for the
// whole batch. ReadWriter is also called by LoadView (etcd_reads.cc), under view_mu_ as well.

#include "etcd/etcd_batch_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "etcd/etcd_backend_internal.h"

namespace ckpt {

using etcd_backend_internal::Put;
using etcdserverpb::Compare;
using etcdserverpb::KeyValue;
using etcdserverpb::RangeRequest;
using etcdserverpb::RequestOp;
using etcdserverpb::TxnResponse;

namespace {

size_t BytesOf(const RequestOp& op) { return op.ByteSizeLong() + 8; }

// A txn whose answer was lost is resolved (asked about, sent again) for up to this many request
// timeouts, pausing this long before each question: a member's death costs etcd an election
// (about a second) and the lost proposal its own request timeout.
constexpr int kResolveWindowPerTimeout = 3;
constexpr auto kResolvePause = std::chrono::milliseconds(100);

}  // namespace

bool EtcdBackend::BatchWriter::Add(size_t op_index, std::vector<RequestOp> requests, bool alone,
                                   int64_t counter) {
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

// Every txn is fenced by the leadership (the leader key's create revision) and by the write
// cursor P/writer (its mod revision as this leader last saw it), and rewrites the cursor with
// its own number. So a txn whose answer is lost (a member died with the proposal, a deadline)
// is resolved instead of ending the leadership: the cursor says whether it landed; if not, the
// same txn goes again, and whichever copy lands first makes the other's compare fail. A member
// of three lost is thus no reason to stop. What cannot be resolved while the lease is
// confirmed, or within the resolve window, still stops the store (kStop).
bool EtcdBackend::BatchWriter::Send() {
  b_.view_mu_.AssertHeld();
  if (txn_.success().empty()) return true;
  // The batch's own operations, for messages: counted before Send adds its own (the cursor, the
  // layout, the high-water mark).
  const size_t ops = static_cast<size_t>(txn_.success_size());
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
  if (!b_.layout_stored_) {
    *txn_.add_success() = Put(b_.layout_.LayoutKey(), std::to_string(etcd::kLayoutVersion));
  }
  if (txn_high_water_ > b_.high_water_) {
    *txn_.add_success() = Put(b_.layout_.HighWaterKey(), std::to_string(txn_high_water_));
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
      stop_ = Status(
          StatusCode::kDeadlineExceeded,
          "a transaction of " + std::to_string(ops) +
              " etcd operations has an unknown outcome: " + error_.message() +
              (b_.may_write_ && !b_.may_write_() ? " (and etcd has not confirmed the lease lately)"
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
  txn_.Clear();
  puts_.clear();
  deletes_.clear();
  bytes_ = 0;
  alone_in_txn_ = false;
  ops_in_txn_.clear();
  txn_high_water_ = 0;
  return true;
}

EtcdBackend::BatchWriter::Outcome EtcdBackend::BatchWriter::AwaitOutcome(
    const std::string& token, std::chrono::steady_clock::time_point give_up_at,
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

EtcdBackend::BatchWriter::Outcome EtcdBackend::BatchWriter::Resolve(const std::string& token,
                                                                    int64_t* landed_at) {
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

bool EtcdBackend::BatchWriter::SendChunks(const PipelineKey& key, int64_t id,
                                          const std::vector<std::string>& chunks) {
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

void EtcdBackend::BatchWriter::Refuse(HaAction action, const Status& etcd_said, size_t ops) {
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

bool EtcdBackend::BatchWriter::Overlaps(const std::vector<RequestOp>& requests) const {
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

}  // namespace ckpt
