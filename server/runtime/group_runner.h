#pragma once
// GroupRunner runs one alignment group's GroupCoordinator on a strand of its own and carries out
// its actions (docs/ALIGNMENT.md): messages to its members' runners (posted to their strands),
// its two timers (the next round, the round's deadline), its store writes (id blocks, the one
// commit of a round), logs and metrics. Members post their readiness, positions, acks and
// failures here; nothing on either side waits for the other.
//
// Threading: public methods may be called from any thread; each posts to strand_ and returns at
// once. Members under "strand_" are touched only by handlers running on strand_. `done`
// callbacks run on strand_ and must not block.

#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/daemon_clock.h"
#include "common/mutex.h"
#include "core/group_coordinator.h"
#include "runtime/daemon_metrics.h"
#include "runtime/store_health.h"
#include "store/metadata_store.h"

namespace ckpt {

class PipelineRunner;

class GroupRunner : public std::enable_shared_from_this<GroupRunner> {
 public:
  // `store`, `clock` and `metrics` must outlive the runner and every handler it posts;
  // `store_health` (may be null) is told the outcome of every group write, as a pipeline's are.
  // `options`: the coordinator's (GroupOptions: ids, the start offset).
  GroupRunner(boost::asio::io_context& io, const StoredGroup& stored, MetadataStore& store,
              const Clock& clock, DaemonMetrics& metrics, StoreHealth* store_health = nullptr,
              GroupOptions options = {});
  GroupRunner(const GroupRunner&) = delete;
  GroupRunner& operator=(const GroupRunner&) = delete;
  ~GroupRunner();

  const std::string& name() const { return name_; }
  // The end of the group's durably reserved ids, from any thread: a member that leaves
  // continues above it.
  int64_t durable_id_counter() const { return durable_id_counter_.load(); }
  // The group's progress as of the last round that ended, from any thread.
  GroupProgress progress() const;

  void Start();
  // Shutdown or deletion: timers stop and nothing more starts; a round with the store still
  // ends (its members' parts wait for it).
  void Stop();

  // --- membership (a member's runner calls these from its strand) ---
  void AddMember(const PipelineKey& key, std::weak_ptr<PipelineRunner> member, int64_t id_floor);
  void RemoveMember(const PipelineKey& key, std::string why);

  // --- what members report ---
  // `predicted_bytes`: its part of the next round's predicted size (admission).
  void MemberState(const PipelineKey& key, bool ready, std::string holdup,
                   int64_t predicted_bytes = 0, bool backlog = false);
  void MemberPositions(const PipelineKey& key, ckpt::MemberPositions positions);
  void MemberDone(const PipelineKey& key, int64_t checkpoint_id, CheckpointCommit commit);
  // Every task of the member committed group round `checkpoint_id` (a commit phase).
  void MemberCommitted(const PipelineKey& key, int64_t checkpoint_id);
  void MemberFailed(const PipelineKey& key, int64_t checkpoint_id, MemberFailure failure,
                    std::string reason);

  // --- operators ---
  // A round now (TriggerCheckpoint, a savepoint of any member). `done` once: refused, or the id
  // of the round that started (a savepoint that had to wait: when it starts, or why it was
  // dropped at `timeout`).
  using RoundDone = std::function<void(Status, int64_t checkpoint_id)>;
  // `check` (when set) is asked of every member first: a refusal of any member refuses the
  // round with that member named (a worker's savepoint with stop must not stop a job its
  // principal may not serve).
  using MemberCheck = std::function<Status(const PipelineKey& member)>;
  void RequestRound(CheckpointKind kind, Millis timeout, RoundDone done, MemberCheck check = {});
  // The group's policy changed (PutAlignmentGroup, a reload).
  void UpdateSpec(AlignmentGroupSpec spec);
  // The group's place in the daemon's admission line (nullopt: no admission). Any thread.
  std::optional<RoundAdmission::View> LookAtAdmission() const {
    if (!admission_) return std::nullopt;
    return admission_->Look(admission_ticket_);
  }
  // Runs `fn` on the strand with the coordinator (read-only use).
  void Inspect(std::function<void(const GroupCoordinator&)> fn);

 private:
  void Run(GroupActions actions);  // strand_
  void Execute(GroupAction& action);
  void LogLine(LogLevel level, const std::string& text) const;
  // The member's runner, if it is still a member and alive.
  std::shared_ptr<PipelineRunner> MemberRunner(const PipelineKey& key) const;
  template <typename F>
  void Post(F&& f);
  // AskAdmission and LeaveAdmission, by this group's ticket (as PipelineRunner's).
  void AskForAdmission(const AdmissionRequest& request);
  void ReleaseAdmission();

  const std::string name_;
  MetadataStore& store_;
  const Clock& clock_;
  DaemonMetrics& metrics_;
  StoreHealth* const store_health_;          // reached from store callbacks: see the constructor
  std::atomic<int64_t> durable_id_counter_;  // written on strand_, read anywhere
  // coordinator_.progress() after each Run, for readers on other threads.
  mutable Mutex progress_mu_;
  GroupProgress published_progress_ CKPT_GUARDED_BY(progress_mu_);

  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using StrandTimer = boost::asio::basic_waitable_timer<DaemonClock, DaemonWaitTraits, Strand>;

  // strand_: every member below is touched only on it.
  Strand strand_;
  GroupCoordinator coordinator_;
  StrandTimer wakeup_timer_;
  StrandTimer deadline_timer_;
  std::map<PipelineKey, std::weak_ptr<PipelineRunner>> members_;
  // Members that left while the commit holding their part was with the store: kept in members_
  // until its outcome went out to them.
  std::set<PipelineKey> leaving_;
  // Who waits for the savepoint the group has queued (RequestRound); told when it starts or is
  // dropped.
  std::vector<RoundDone> queued_round_waiters_;
  bool stopped_ = false;
  GroupProgress published_progress_copy_;  // what published_progress_ holds (no lock to compare)
  // The daemon's admission (null: none), this group's ticket in it (taken when the runner is
  // made) and its asks: an answer names the ask it answers.
  const std::shared_ptr<RoundAdmission> admission_;
  const AdmissionTicket admission_ticket_;
  uint32_t admission_asks_ = 0;
};

}  // namespace ckpt
