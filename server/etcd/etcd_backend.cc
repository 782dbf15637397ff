// EtcdBackend's setup, and the questions asked of it from outside its write path: construction,
// the standby's warm copy (StartWarming; warm_copy_progress and unreadable_seen_by_standby for the
// metrics page), the fence set at takeover, the check that etcd takes a full txn, and the view as
// text (tests). Elsewhere: etcd_apply_batch.cc and etcd_commit_plan.cc plan a batch,
// etcd_batch_writer.cc sends it fenced, etcd_reads.cc reads.
//
// Threading: StartWarming on the daemon's startup thread; SetFence and CheckTxnLimit on the
// takeover thread. The metrics page's questions come on the control loop and take watching_mu_
// alone, never view_mu_ (which a takeover holds for seconds while it loads).

#include "etcd/etcd_backend.h"

#include <memory>
#include <set>
#include <string>
#include <utility>

namespace ckpt {

using etcdserverpb::RangeRequest;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

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

size_t EtcdBackend::unreadable_seen_by_standby() {
  MutexLock lock(watching_mu_);
  return watching_ ? watching_->unreadable() : 0;
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

}  // namespace ckpt
