#pragma once
// PipelineRunner runs one PipelineCoordinator on its own strand and carries out its actions: sends
// to worker sessions, Asio timers, store writes (whose completions it posts back to the strand),
// logs with job and pipeline, metrics.
//
// One class, in files of one job each: pipeline_runner.cc (construction, worker stream and daemon
// events), pipeline_runner_operators.cc (operator calls), pipeline_runner_savepoints.cc (operators'
// savepoints and their observers), pipeline_runner_group.cc (an alignment group's member),
// pipeline_runner_actions.cc (carrying out the coordinator's actions: sends, the timer, store
// writes, metrics, logs); pipeline_runner_internal.h holds what they share.
//
// Threading: public methods may be called from any thread; each posts its work to strand_ and
// returns at once. Members under "strand_" are touched only by handlers running on strand_. Nothing
// on the strand blocks: the store is asynchronous and sessions queue their writes.
//
// The strand is the shard's loop itself: an IoShards io_context is run by exactly one thread, so
// its handlers never overlap, and an asio::strand on top of it would only add a queue, a lock and
// a re-post (an allocation) to every handler (at 100,000 pipelines that was a tenth of the CPU
// and most of the trigger delay's tail, docs/perf-notes/notebook.md). Order: what one thread posts
// runs in that order. Unlike an asio::strand, what a handler of this shard posts is queued when the
// handler returns, so a post another thread makes meanwhile can run first; nothing here relies on
// such a post coming second (the other threads' posts are their own events: acks, hellos, store
// completions, operator calls).

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/daemon_clock.h"
#include "core/pipeline_coordinator.h"
#include "core/session_table.h"
#include "logging/log_throttle.h"
#include "runtime/daemon_metrics.h"
#include "runtime/pipeline_metrics.h"
#include "runtime/savepoint_observer.h"
#include "runtime/session_sink.h"
#include "runtime/store_health.h"
#include "store/metadata_store.h"

namespace ckpt {

class BlockingWork;

class GroupRunner;

// What every runner of a host shares, made once (PipelineHost) and held by each runner through
// one pointer instead of a copy of each field: a runner exists once per pipeline, up to 100,000
// of them. Constant once made.
struct RunnerContext {
  // Must outlive every runner and every handler a runner posts.
  MetadataStore& store;
  // Read on the strands and also from other threads (an ack's arrival on its completion queue's
  // thread, a store completion on the store's): safe for concurrent use.
  const Clock& clock;
  DaemonMetrics& metrics;
  int64_t heartbeat_interval_ms = 3000;
  int64_t lease_ttl_ms = 10000;
  // Told the outcome of every store write; may be null (tests, benchmarks). Reached from store
  // callbacks on the store's writer, so its owner (the host) must outlive the store's last
  // callback: the daemon closes the store before the host.
  StoreHealth* store_health = nullptr;
  // A pin on another pipeline's checkpoint went away (PinDropped): tells that pipeline. Any
  // thread; must not block. May be empty.
  std::function<void(const CheckpointRef&)> on_pin_dropped{};
  // The daemon's admission caps (docs/PROTOCOL.md, "Admission"), shared with every group; null:
  // none. Held here so that it outlives every runner (a runner leaves it when destroyed).
  std::shared_ptr<RoundAdmission> admission{};
  // Where a fallback's store read runs (ReadRestoreCandidate), off every strand; must outlive
  // every runner. Null (tests and benchmarks without a host): read on the strand.
  BlockingWork* store_reads = nullptr;
};

class PipelineRunner : public std::enable_shared_from_this<PipelineRunner> {
 public:
  // `io` must be run by exactly one thread (an IoShards shard): it is the runner's strand.
  PipelineRunner(boost::asio::io_context& io, const StoredPipeline& stored, bool restarted,
                 std::shared_ptr<const RunnerContext> context, CoordinatorOptions coordinator);
  PipelineRunner(const PipelineRunner&) = delete;
  PipelineRunner& operator=(const PipelineRunner&) = delete;
  ~PipelineRunner();

  // Before Start, from the thread that made the runner (PipelineCoordinator::SetStartSlot).
  void SetStartSlot(uint64_t slot) { coordinator_.SetStartSlot(slot); }

  // Any thread: the coordinator's key is constant (PipelineCoordinator::key).
  const PipelineKey& key() const { return coordinator_.key(); }

  void Start();

  // Worker stream events. Register answers on `sink`: welcome, or End with the error.
  void Register(SessionId session, std::shared_ptr<SessionSink> sink, HelloInfo hello);
  void Ack(SessionId session, int64_t checkpoint_id, std::string task_id, TaskState state,
           AckFigures reported = {}, int64_t position = 0);
  void Decline(SessionId session, int64_t checkpoint_id, std::string task_id, std::string reason,
               bool expired, int64_t position = 0);
  // A task's `committed` (docs/PROTOCOL.md, "Commit phase").
  void Committed(SessionId session, int64_t checkpoint_id, std::string task_id);
  // A task's restore_result (docs/PROTOCOL.md, "Verified restore").
  void RestoreResult(SessionId session, int64_t checkpoint_id, std::string task_id, bool ok,
                     std::string reason);
  // A heartbeat's positions (task id, position).
  void Positions(SessionId session, std::vector<std::pair<std::string, int64_t>> positions);
  // A heartbeat's backlog flag changed on this stream (PipelineCoordinator::OnBacklog).
  void Backlog(SessionId session, bool backlog);
  // A worker's savepoint_request. `may_serve(job)`: whether the asker may act for pipelines of
  // `job` (OK, or the refusal); a member's request asks it of every member of its group.
  using JobCheck = std::function<Status(const std::string& job)>;
  void RequestSavepoint(SessionId session, std::string target, bool stop, JobCheck may_serve);
  // `goodbye`: the worker deregistered cleanly.
  void SessionEnded(SessionId session, std::string why, bool goodbye = false);

  // The store takes writes again, or fails them (StoreHealth): triggers resume or hold.
  void SetStoreWritable(bool writable);

  // Daemon shutdown: stop triggering; later end every stream with `status`. `begun` runs on the
  // strand once the runner has taken it in (also if the pipeline was deleted): from then on the
  // pending gauge counts this runner's round, if it has one (a trigger sent just before is no
  // longer on its way to the gauge).
  void BeginShutdown(std::function<void()> begun = nullptr);
  void EndAllSessions(Status status);
  // A new access policy: ends (with the status returned) every live stream whose principal it
  // refuses for this pipeline's job; their tasks are lost as with any ended stream. `refuse`
  // runs on the strand and must not block.
  using PrincipalCheck =
      std::function<std::optional<Status>(const std::string& principal, const std::string& job)>;
  void EndSessionsRefused(PrincipalCheck refuse);

  // --- operators; each `done` runs on the strand and must not block ---
  using StatusDone = std::function<void(Status, const PipelineStatus&)>;
  void Pause(StatusDone done);
  void Resume(StatusDone done);
  // `merge` turns the current spec into the new one (or refuses), on the strand, in the same step
  // that applies it.
  using SpecMerge = std::function<Result<PipelineSpec>(const PipelineSpec& current)>;
  void Update(SpecMerge merge, StatusDone done);
  void TriggerCheckpoint(std::function<void(Status, const std::optional<PendingSummary>&)> done);
  // Asks for a savepoint; `observer` gets its progress and exactly one final update (also when the
  // request is refused). Joining callers all get the same savepoint's updates.
  void RequestSavepoint(std::string target, bool stop, Millis timeout,
                        std::shared_ptr<SavepointObserver> observer);
  // `observer` no longer waits (its call was cancelled): it is let go at once, and a queued
  // savepoint nobody waits for any more is dropped (PipelineCoordinator::OnSavepointCallersGone).
  void ForgetSavepointObserver(const SavepointObserver* observer);
  // The restore loop (PipelineCoordinator's AddPin, OnPinDropped and Restore). `done` of
  // Restore once the new restore point is durable (or refused).
  void AddPin(int64_t checkpoint_id, PipelineKey holder, std::function<void(Status)> done);
  void OnPinDropped(int64_t checkpoint_id);
  void Restore(PipelineKey source, CompletedCheckpoint checkpoint, StatusDone done);
  // Removes a savepoint or a retained checkpoint from the history; `done` once that is durable
  // (or refused, or failed). Its workers then get `release`.
  void DeleteCheckpoint(int64_t checkpoint_id, std::function<void(Status)> done);
  // Stops the pipeline for good and deletes its record from the store; once that is durable its
  // streams get `release` of every checkpoint it had, end with NOT_FOUND, and `done` gets the
  // store's answer (on the store's writer). A pipeline declared in the config file is refused
  // (FAILED_PRECONDITION naming `declared_in`, the file): the file would bring it back at the
  // next reload; so is one whose checkpoint is another pipeline's restore point. `stopped`: the
  // pipeline is gone from the daemon (whether or not the store's delete succeeded).
  using DeleteDone = std::function<void(const Status&, bool stopped)>;
  void Delete(DeleteDone done, const std::string& declared_in);
  // The config file no longer declares this pipeline: from now on it is the API's (a reload
  // leaves it alone, DeletePipeline may remove it). `done(true)` if it was declared until now.
  void Undeclare(std::function<void(bool)> done);

  // Only once the io_context is stopped and its threads joined: drops the references to sessions
  // and savepoint observers, which hold the runner in turn. Handlers that would have dropped them
  // (a SessionEnded still queued at stop) never run, and the cycle would outlive the daemon.
  void ReleaseAfterStop();

  // Runs `fn` on the strand with the coordinator (read-only use). For status queries and tests.
  void Inspect(std::function<void(const PipelineCoordinator&)> fn);
  // ExplainPipeline: the coordinator's explanation with each waiting task's last message time
  // (from its stream) and the sentence; `done` on the strand, NOT_FOUND once deleted.
  void Explain(int64_t stuck_threshold_ms,
               std::function<void(Status, const Explanation&, const std::string& sentence)> done);

  // A config reload declares this pipeline with `spec`: applies it (on the strand) if the pipeline
  // came from the config file, leaves it alone if it was created through the API. `done` gets
  // whether the spec changed, or why it was not applied; it runs on the strand, must not block.
  void ApplyDeclaredSpec(PipelineSpec spec, std::function<void(Result<bool>)> done);

  // --- an alignment group's member (docs/ALIGNMENT.md) ---
  // Makes the pipeline a member of `group` (whose policy is `spec`): from now on its rounds are
  // the group's, and it reports its readiness and positions there on every change.
  void JoinGroup(std::shared_ptr<GroupRunner> group, AlignmentGroupSpec spec);
  // From the group's strand: its round starts, became durable, or ended without completing.
  void StartGroupRound(int64_t checkpoint_id, CheckpointKind kind, int64_t position);
  void GroupRoundDurable(int64_t checkpoint_id);
  // The group's effective interval changed (PipelineCoordinator::SetGroupInterval).
  void GroupInterval(int64_t ms, std::string reason);
  // Every member committed group round `checkpoint_id`: this one may mark it COMMITTED.
  void GroupCommitted(int64_t checkpoint_id);
  void EndGroupRound(int64_t checkpoint_id, MemberOutcome outcome, std::string reason);

  // Safe from any thread, at any time: the numbers the per-pipeline series of /metrics show.
  const PipelineMetrics& pipeline_metrics() const { return pipeline_metrics_; }

 private:
  void Run(Actions actions);  // strand_
  void DeleteNow(DeleteDone done, const std::string& declared_in);
  // A delete that waited for the member's group round to end runs once it has.
  void RunDeferredDelete();
  // A member: its readiness and positions, to the group when they changed.
  void ReportToGroup();
  // A member's operator round (TriggerCheckpoint, a savepoint) is asked of its group.
  // `answer` runs on this strand, after the round's StartGroupRound when it started.
  // `check`: asked of every member by the group first (GroupRunner::RequestRound).
  void RequestGroupRound(CheckpointKind kind, Millis timeout,
                         std::function<void(PipelineRunner&, const Status&)> answer,
                         std::function<Status(const PipelineKey&)> check = {});
  void NotifySavepointObservers(const RoundFinished* finished);
  // Adds `observer` and gives it the update it missed, if any.
  void AddSavepointObserver(const std::shared_ptr<SavepointObserver>& observer);
  // May move out of `action` (a message goes to the last of its sessions without a copy).
  void Execute(Action& action);
  // AskAdmission and LeaveAdmission: the daemon's admission, by this runner's ticket. An answer
  // to an ask that was left or asked again since is dropped (admission_asks_).
  void AskForAdmission(const AdmissionRequest& request);
  // ReadRestoreCandidate: the read off the strand, its answer back on it. A read the store may
  // answer later (UNAVAILABLE, ...) is tried again, from a second up to every 30 s, while the
  // coordinator still waits for it; one that does not read is passed over (answered as not held).
  void ReadRestoreCandidateOffStrand(int64_t failed_id, int64_t checkpoint_id, int attempt = 0);
  void RetryRestoreCandidate(int64_t failed_id, int64_t checkpoint_id, int attempt,
                             const std::string& why);
  void ReleaseAdmission();
  AdmissionTicket admission_ticket();  // taken on first use
  // Tells StoreHealth how a store write went. Called on the store's thread before the write's
  // completion is posted: a write the store refused (UNAVAILABLE) also holds this pipeline's
  // triggers at once, ahead of its completion on the strand, instead of after StoreHealth's news
  // has gone round every pipeline (a trigger could slip out meanwhile). StoreHealth's next
  // "writable" releases it, and that news is always posted after this.
  void ReportWrite(const Status& result);
  // The completion of a record or progress write: a failure is logged and the latest state
  // written again after a second.
  // `then`, if any, is told the outcome too (an operator waiting for it).
  MetadataStore::Done PersistDone(bool whole_record, std::function<void(Status)> then = nullptr);
  static constexpr SteadyTime kNoDeadline = SteadyTime::max();
  void ArmWakeupAt(SteadyTime at);
  void ArmTimeoutAt(SteadyTime at, int64_t checkpoint_id);
  // Makes timer_ wait for the earlier deadline, or for none.
  void ArmTimer();
  // A wait that ended at `at`: runs the deadlines due by then.
  void OnTimer(SteadyTime at);
  void LogLine(LogLevel level, const std::string& text) const;
  // RoundStuck: counted, and logged with the explanation within a daemon-wide budget.
  void NoteStuck(int64_t checkpoint_id);
  // Moves this pipeline's count in metrics.pipelines_by_state to `state` (nullopt: out of all).
  void CountState(std::optional<PipelineState> state);
  // Moves metrics.pending_checkpoints and this pipeline's gauge to the coordinator's state.
  void UpdatePendingGauge();
  // Every event a runner receives goes through one of these. Post: worker events (dropped once
  // deleted); timers check deleted_ themselves. PostStoreCompletion: never dropped.
  // PostOperator: always runs, and answers NOT_FOUND once deleted.
  template <typename F>
  void Post(F&& f);
  template <typename F>
  void PostStoreCompletion(F&& f);
  template <typename F>
  void PostOperator(F&& f);
  Status DeletedStatus() const;
  int64_t MicrosSince(SteadyTime start) const;

  // Constant after construction. Only what the runner itself reads is kept (the coordinator keeps
  // its own options): this object exists once per pipeline.
  const std::shared_ptr<const RunnerContext> context_;

  // Atomics: written on strand_, read by scrapes from any thread.
  PipelineMetrics pipeline_metrics_;

  // Timers typed on the strand rather than steady_timer's type-erased any_io_executor: every
  // wait then completes on the strand without the erased executor's heap copies, and each timer
  // is smaller (this is per pipeline, and there are up to 100,000 of them).
  using Strand = boost::asio::io_context::executor_type;
  using StrandTimer = boost::asio::basic_waitable_timer<DaemonClock, DaemonWaitTraits, Strand>;

  // strand_: every member below is touched only on it.
  Strand strand_;
  PipelineCoordinator coordinator_;
  // One timer for the coordinator's two deadlines, its next wakeup and the pending round's
  // timeout: armed at the earlier (ArmTimer), a fire runs each that is due (OnTimer). One rather
  // than two: this is per pipeline, and each is 80 bytes and an entry in the shard's timer heap.
  StrandTimer timer_;
  SteadyTime wakeup_at_ = kNoDeadline;
  SteadyTime timeout_at_ = kNoDeadline;
  int64_t timeout_checkpoint_id_ = 0;  // the round timeout_at_ is for
  SessionTable<std::shared_ptr<SessionSink>> sessions_;
  // When the pending round's last ack was read from its stream (ckptd_round_fan_in_seconds);
  // the epoch: none (its complete was sent, or a new round began).
  SteadyTime round_last_ack_at_{};
  // How long the store held the pending round's commit (queued to durable), set as its
  // completion runs: the fan-in less this is the loop's and the streams' share (round_fan_in_own).
  SteadyTime::duration round_store_time_{};
  std::optional<PipelineState> counted_state_;  // where it adds one in pipelines_by_state
  bool counted_pending_ = false;  // whether this pipeline adds one to metrics.pending_checkpoints
  bool deleted_ = false;          // after Delete, every event is dropped
  bool retry_whole_record_ = false;  // a failed write to retry was a whole record
  bool timer_armed_ = false;         // a wait on timer_ is outstanding, at timer_.expiry()
  bool timer_firing_ = false;        // within OnTimer: its runs re-arm once, when it ends
  const bool restarted_;             // constant: the daemon restarted with it
  // This pipeline's number in the daemon's admission (0: not taken yet), and how many asks it
  // made: an admission's answer names the ask it answers.
  uint32_t admission_asks_ = 0;
  AdmissionTicket admission_ticket_ = 0;
  // What most pipelines never need: made on first use (occasional()), so that the others pay one
  // pointer for it.
  struct Occasional {
    std::vector<std::shared_ptr<SavepointObserver>> savepoint_observers;
    std::unique_ptr<SavepointUpdate> last_savepoint_update;  // null: none
    // Operators waiting for a DeleteCheckpoint to be durable, by checkpoint id.
    std::vector<std::pair<int64_t, std::function<void(Status)>>> delete_waiters;
    LogThrottle refused_hello_log{std::chrono::seconds(10)};
    std::unique_ptr<StrandTimer> persist_retry_timer;  // made on the first failed persist
  };
  std::unique_ptr<Occasional> occasional_;
  Occasional& occasional();  // made on first use
  // A member's link to its group (null otherwise: an ungrouped pipeline pays one pointer).
  struct GroupLink {
    std::shared_ptr<GroupRunner> runner;
    bool reported = false;  // the fields below were sent
    bool ready = false;
    std::string holdup;
    int64_t predicted_bytes = 0;  // PredictedRoundBytes, as sent
    bool backlog = false;         // HasBacklog, as sent
    MemberPositions positions;
    uint64_t positions_version = 0;  // PositionGate::version() when `positions` was sent
    // A delete waiting for the outcome of the group round its part is in (null: none).
    std::function<void(PipelineRunner&)> deferred_delete;
    bool left_for_delete = false;  // RemoveMember was sent for that delete
    bool savepoint_asked = false;  // a savepoint asked of the group is not answered yet
  };
  std::unique_ptr<GroupLink> group_;
};

}  // namespace ckpt
