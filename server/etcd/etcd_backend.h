#pragma once
// EtcdBackend: the StoreBackend of store.backend etcd (layout in etcd_layout.h). GroupCommitStore
// (store/group_commit_store.h) hands it batches; it turns each into as few etcd transactions as
// etcd's limits allow (store.etcd.max_txn_ops operations, about kMaxTxnBytes a request, no key
// written twice in one txn), each fenced: its compares are CreateRevision(leader key) == the
// revision this daemon won its leadership at, so that a deposed leader's write cannot land
// (docs/DESIGN.md), and ModRevision(P/writer) == the write cursor's last revision, which the txn
// rewrites, so that a txn whose answer was lost can be told landed or not and sent again without
// landing twice.
//
// Outcomes (BatchResult):
// - Every txn committed: kCommitted, each op its own status. An op that cannot apply on its own
//   (a commit for a deleted pipeline, a duplicate id) is left out of the txn and fails alone,
//   decided from the backend's view of what is stored (below).
// - Before anything is sent, the lease is not confirmed (etcd unreachable, quorum lost) or the
//   view or the write cursor cannot be read: kNotWritten UNAVAILABLE (the store is failing;
//   StoreHealth probes until it takes writes again).
// - A txn whose answer is lost: resolved through the cursor (landed: go on; not landed: sent
//   again) for up to three request timeouts.
// - Anything else once a txn was sent: kStop, and GroupCommitStore's fail-stop exits the daemon
//   (75), a standby taking over: a failed compare (leadership lost), an outcome still unknown at
//   the end of that window, a txn etcd refused (the view would no longer be sure).
//
// The view of what is stored: which pipelines have a record, their checkpoint ids and where
// their retained history starts (etcd_layout.h: `retained_from`, trims are lazy), their id
// counters. It is loaded by LoadPipelines (which the daemon calls at takeover, after the fence is
// set), or by the first batch if none did, and kept by ApplyBatch. Only the fenced leader writes
// under the prefix, so it stays exact.
//
// Threading: ApplyBatch on GroupCommitStore's writer thread; the reads on any thread. The view is
// guarded by view_mu_, which ApplyBatch holds for a whole batch and LoadPipelines while it loads.
// ListCompleted must not wait for a batch, so where each history starts is also published, as
// each txn lands, under horizon_mu_ (held only to copy one number).
//
// The code, by concern: etcd_backend.cc (setup, the fence, the standby's warm copy),
// etcd_apply_batch.cc and etcd_commit_plan.cc (a batch planned into txns), etcd_batch_writer.cc
// (the fenced txns and their outcomes), etcd_reads.cc (the load and every other read).

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_layout.h"
#include "etcd/etcd_mirror.h"
#include "logging/log_throttle.h"
#include "store/store_backend.h"

namespace ckpt {

class EtcdBackend final : public StoreBackend {
 public:
  // etcd's default request limit (--max-request-bytes 1.5 MiB), with room for the fence and the
  // request's framing. The operations a txn may carry are store.etcd.max_txn_ops
  // (EtcdSettings), etcd's --max-txn-ops.
  static constexpr size_t kMaxTxnBytes = 1024 * 1024;
  // A checkpoint value above this is written as chunks with a manifest (etcd_layout.h).
  static constexpr size_t kMaxValueBytes = 512 * 1024;
  // Checkpoints out of the history are deleted once this many (at most `retained`) pile up.
  static constexpr int kTrimSlack = 8;

  // `may_write`: whether the leadership's lease is confirmed now (EtcdElection::LeaseConfirmed);
  // a batch is not sent while it is not.
  EtcdBackend(std::shared_ptr<EtcdClient> client, std::function<bool()> may_write);

  // While this daemon stands by: keep a copy of the prefix warm (etcd/etcd_mirror.h), so that
  // the takeover's load reads nothing again when the copy has seen every earlier leader's last
  // write. Before the first load only; that load ends it, warm or not.
  void StartWarming();

  // The fence every write carries: set once, at takeover, before the first write and the load.
  // Writes before it fail FAILED_PRECONDITION (a standby writes nothing).
  void SetFence(std::string leader_key, int64_t leader_revision);

  // Whether etcd takes a transaction of max_txn_ops operations (a read-only one: nothing is
  // written). FAILED_PRECONDITION, naming both settings, when etcd refuses it (its members' own
  // --max-txn-ops is lower: every full batch would be refused, and a refused txn stops the
  // store); UNAVAILABLE when etcd does not answer. Called at takeover, before the first write.
  Status CheckTxnLimit();

  const std::string& name() const override { return name_; }
  BatchResult ApplyBatch(const std::vector<WriteOp>& ops) override;
  Result<std::vector<StoredPipeline>> LoadPipelines() override;
  Result<int64_t> LoadIdCounter(const PipelineKey& key) override;
  Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                         int64_t before_id) override;
  Result<std::vector<StoredGroup>> LoadGroups() override;
  std::vector<UnreadableRecord> UnreadableRecords() override;
  // While standing by: the records the warm copy's watch brought that cannot be read, and keys
  // no ckptd writes (etcd/etcd_mirror.h), held now; 0 once this daemon loaded.
  size_t unreadable_seen_by_standby();

  // Room a group round's txn keeps beside its members' values (their keys, the group's value,
  // the fence and the request's framing).
  static constexpr size_t kGroupTxnSlack = 64 * 1024;

  // Transactions sent and committed (metrics, tests, benchmarks).
  uint64_t txns_committed() const { return txns_committed_.load(std::memory_order_relaxed); }
  // Transactions sent again because etcd lost the first copy (a member died with it).
  uint64_t txns_resent() const { return txns_resent_.load(std::memory_order_relaxed); }
  // The view as text, one line a pipeline and counter (tests: a warm load's and a full read's
  // must be the same).
  std::string DescribeView();
  // The warm copy's loads and watch events applied so far; (0, 0) without one (tests).
  std::pair<uint64_t, uint64_t> warm_copy_progress();
  // Whether the last load came from the standby's warm copy (tests, logs).
  bool last_load_warm() const { return last_load_warm_.load(std::memory_order_relaxed); }

  // How long a takeover waits for the warm copy to catch up before it reads etcd instead.
  static constexpr std::chrono::milliseconds kWarmWait{3000};

 private:
  struct PipelineView {
    bool has_record = false;
    std::set<int64_t> checkpoint_ids;  // kind CHECKPOINT stored (some below retained_from)
    std::set<int64_t> savepoint_ids;   // never trimmed
    std::map<int64_t, int> chunked;    // id -> chunk count, for those written in chunks
    int64_t retained_from = 0;         // ids of kind c below it are out of the history
    std::vector<int64_t> kept;         // ... unless named here (etcd::Horizon)
    etcd::Horizon horizon() const { return {retained_from, kept}; }
  };
  class BatchWriter;  // one batch's fenced txns (etcd_batch_writer.h)
  // A commit encoded against its pipeline's view (PrepareCommit), not yet in a txn.
  struct PreparedCommit {
    std::string value;                // the checkpoint key's
    std::vector<std::string> chunks;  // written first, when the states do not fit `value`
    etcd::Horizon horizon;
    int64_t retained_from = 0;
  };

  // Plans a DeleteCheckpointsOp into the batch: a range delete per id (its key of whichever kind)
  // and its chunks.
  bool PlanDeleteCheckpoints(BatchWriter& writer, size_t op_index, const DeleteCheckpointsOp& op)
      CKPT_REQUIRES(view_mu_);
  // Plans a CheckpointCommitOp into the batch (chunks sent first when it needs them).
  bool PlanCommit(BatchWriter& writer, size_t op_index, const CheckpointCommit& commit)
      CKPT_REQUIRES(view_mu_);
  // Adds the commit's id to the view and encodes it (values above `max_value_bytes` in chunks).
  // On an error the view is as before.
  Result<PreparedCommit> PrepareCommit(PipelineView& view, const CheckpointCommit& commit,
                                       size_t max_value_bytes) CKPT_REQUIRES(view_mu_);
  // Takes a prepared commit's id out of the view again (a group round that is not written).
  void UndoPrepare(PipelineView& view, const CheckpointCommit& commit) CKPT_REQUIRES(view_mu_);
  // The prepared commit's requests (its key, its counter, and with `may_trim` the trim due) and
  // the view after it.
  void FinishCommit(PipelineView& view, const CheckpointCommit& commit, PreparedCommit prepared,
                    bool may_trim, std::vector<etcdserverpb::RequestOp>* requests)
      CKPT_REQUIRES(view_mu_);
  // Why `commit` cannot be stored now (its id, its pipeline's record, the retained history); OK
  // when it can. Changes nothing.
  Status CheckCommit(const CheckpointCommit& commit) CKPT_REQUIRES(view_mu_);
  // Plans a CommitGroupRoundOp: every member's chunks first, then one txn with every member's
  // checkpoint key and the group's (the commit point). Nothing of it when a member cannot be
  // stored.
  bool PlanGroupRound(BatchWriter& writer, size_t op_index, const GroupRoundCommit& commit)
      CKPT_REQUIRES(view_mu_);
  // The groups, read once per leadership before its first group write.
  Status LoadGroupView() CKPT_REQUIRES(view_mu_);
  // After a refused txn: the view of every pipeline and group that `ops[which]` name, read
  // again from etcd (what the refused plans changed is forgotten). If that read fails, the next
  // batch loads the whole view first.
  void RereadViewOf(const std::vector<WriteOp>& ops, const std::vector<size_t>& which)
      CKPT_REQUIRES(view_mu_);
  Status RereadPipelineView(const PipelineKey& key) CKPT_REQUIRES(view_mu_);
  Status RereadGroupView(const std::string& name) CKPT_REQUIRES(view_mu_);
  // Every group as etcd holds it now (any thread; touches no state).
  Result<std::vector<StoredGroup>> ReadGroups();
  // Adds to `requests` the range deletes of checkpoints below the history's start (at most
  // kMaxTrimsPerCommit requests; the next commits take the rest).
  void PlanTrim(const PipelineKey& key, PipelineView& view,
                std::vector<etcdserverpb::RequestOp>* requests) CKPT_REQUIRES(view_mu_);
  // Loads the view (and the pipelines, for LoadPipelines): from the warm copy, else from etcd.
  Result<std::vector<StoredPipeline>> LoadView() CKPT_REQUIRES(view_mu_);
  // Everything a load reads, at one revision (any thread; touches no state).
  Result<etcd::StoreImage> ReadImage();
  // The view and the pipelines from an image.
  Result<std::vector<StoredPipeline>> BuildView(const etcd::StoreImage& image)
      CKPT_REQUIRES(view_mu_);
  std::chrono::milliseconds request_timeout() const;
  // The write cursor's key/value now (a linearizable read); an absent key has mod revision 0.
  Result<etcdserverpb::KeyValue> ReadWriter();
  // The leader key's create revision now (0: it is gone).
  Result<int64_t> ReadFenceRevision() CKPT_REQUIRES(view_mu_);
  // Every key/value of [key, range_end), page by page, at one revision (the first page's).
  Result<std::vector<etcdserverpb::KeyValue>> RangeAll(const std::string& key,
                                                       const std::string& range_end, bool keys_only,
                                                       int64_t* revision);
  // Adds the task states of `ref`'s `count` chunks (checkpoint key `key`), read at `revision`.
  Status ReadChunks(const etcd::Layout::CheckpointRef& ref, const std::string& key, int count,
                    int64_t revision, CompletedCheckpoint* checkpoint);
  // The values of `keys` at `revision`, in that order, read a few dozen per (read-only) txn.
  Result<std::vector<std::string>> ReadValues(const std::vector<std::string>& keys,
                                              int64_t revision);

  const std::shared_ptr<EtcdClient> client_;
  const etcd::Layout layout_;
  const std::string name_;
  const std::function<bool()> may_write_;
  const int max_txn_ops_;  // store.etcd.max_txn_ops
  std::atomic<uint64_t> txns_committed_{0};
  std::atomic<uint64_t> txns_resent_{0};
  std::atomic<bool> last_load_warm_{false};

  Mutex view_mu_;
  std::string fence_key_ CKPT_GUARDED_BY(view_mu_);
  int64_t fence_revision_ CKPT_GUARDED_BY(view_mu_) = 0;
  std::map<PipelineKey, PipelineView> pipelines_ CKPT_GUARDED_BY(view_mu_);
  std::map<PipelineKey, int64_t> counters_ CKPT_GUARDED_BY(view_mu_);
  bool view_loaded_ CKPT_GUARDED_BY(view_mu_) = false;
  std::map<std::string, StoredGroup> groups_ CKPT_GUARDED_BY(view_mu_);
  bool groups_loaded_ CKPT_GUARDED_BY(view_mu_) = false;
  // Refusals (etcd full, rate-limited) are logged at most once per 10 s, with a count.
  LogThrottle refusal_log_ CKPT_GUARDED_BY(view_mu_){std::chrono::seconds(10)};
  // P/layout holds this binary's kLayoutVersion (else the next txn writes it).
  bool layout_stored_ CKPT_GUARDED_BY(view_mu_) = false;
  // The write cursor (etcd_layout.h, P/writer): its mod revision as this leader last wrote or
  // read it (read before the first txn of a leadership), and the number of its last txn.
  bool writer_known_ CKPT_GUARDED_BY(view_mu_) = false;
  int64_t writer_revision_ CKPT_GUARDED_BY(view_mu_) = 0;
  int64_t writer_seq_ CKPT_GUARDED_BY(view_mu_) = 0;

  // The standby's warm copy, until the first load (declared after what its loader uses, so
  // that it stops first).
  std::unique_ptr<etcd::EtcdMirror> mirror_ CKPT_GUARDED_BY(view_mu_);
  // The same mirror for the metrics page's questions (warm_copy_progress,
  // unreadable_seen_by_standby), which must not wait for view_mu_: a takeover holds that for
  // seconds while it loads, and the page is rendered on the control loop. Set and cleared under
  // both locks; the mirror is destroyed only after this is cleared.
  Mutex watching_mu_;  // taken after view_mu_ when both are held
  etcd::EtcdMirror* watching_ CKPT_GUARDED_BY(watching_mu_) = nullptr;

  // The store-wide high-water mark of ids (etcd_layout.h, P/high_water) as this leader knows it:
  // loaded, then raised by every txn that raises a counter.
  int64_t high_water_ CKPT_GUARDED_BY(view_mu_) = 0;

  // What the last load could not read (UnreadableRecords); held for any thread.
  Mutex unreadable_mu_;
  std::vector<UnreadableRecord> unreadable_pipelines_ CKPT_GUARDED_BY(unreadable_mu_);
  std::vector<UnreadableRecord> unreadable_groups_ CKPT_GUARDED_BY(unreadable_mu_);

  Mutex horizon_mu_;
  // Each pipeline's retained_from as last made durable, for ListCompleted.
  std::map<PipelineKey, etcd::Horizon> horizons_ CKPT_GUARDED_BY(horizon_mu_);
};

}  // namespace ckpt
