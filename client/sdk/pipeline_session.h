#pragma once
// PipelineSession is the PipelineWorker implementation: one pipeline's connection state machine.
//
//   Idle --Start--> Connecting --welcome--> Connected
//   Connecting/Connected --stream ended--> BackingOff --timer--> Connecting   (retried statuses)
//   Connecting --refused by a standby--> BackingOff --timer(0)--> Connecting   (at the leader)
//   Connecting/Connected --stream ended--> Stopped                            (given-up statuses)
//   Connecting/Connected --Goodbye--> SayingGoodbye --stream ended--> Stopped
//   any --Stop--> Stopping --stream ended--> Stopped   (or Stopped at once when no stream is up)
//
// Threading: public methods are thread-safe and post to strand_; all state below "strand_ only"
// is touched only there. Attempt callbacks arrive on the runtime's stream-queue threads and are
// posted too. The user's Post/RunAfter work runs on strand_ as well, but sees none of this state.

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "ckpt/worker.h"
#include "common/leader_follower.h"
#include "sdk/backoff.h"
#include "sdk/connect_attempt.h"
#include "sdk/epoch_filter.h"
#include "sdk/runtime_core.h"
#include "sdk/standby_poll.h"

namespace ckpt::sdk::internal {

class PipelineSession final : public PipelineWorker,
                              public AttemptListener,
                              public std::enable_shared_from_this<PipelineSession> {
 public:
  // Used when the daemon announces no heartbeat interval (the daemon's default).
  static constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{3000};
  // A session that stayed up this long resets the backoff.
  static constexpr std::chrono::milliseconds kStableSession{1000};
  // Once a standby has answered since the last welcome, or a welcomed stream was lost while the
  // worker knows several daemons, retries are no further apart than this (jittered): a takeover is
  // due within the election TTL, and the workers should find the new leader within a second of
  // it, not after a backoff grown while it campaigned (see StandbyPoll).
  static constexpr std::chrono::milliseconds kStandbyPollMax{1000};
  // ... for this long after the first such answer: a group that stays without a leader (etcd's
  // quorum lost) is then retried at the normal backoff again.
  static constexpr std::chrono::milliseconds kStandbyPollWindow{30000};

  PipelineSession(std::shared_ptr<RuntimeCore> core, PipelineWorkerOptions options,
                  PipelineHandlers handlers);
  ~PipelineSession() override;

  void Start() override;
  void Ack(int64_t checkpoint_id, std::string task_id, TaskStateInfo state, AckFigures figures = {},
           std::optional<int64_t> position = std::nullopt) override;
  void Decline(int64_t checkpoint_id, std::string task_id, std::string reason, bool expired,
               int64_t position) override;
  void SetPosition(const std::string& task_id, int64_t position) override;
  void SetBacklog(bool backlog) override;
  // On strand_: a heartbeat carrying backlog_ when the daemon has not heard it on this stream.
  void SendBacklogIfChanged();
  void RequestSavepoint(std::string target, bool stop) override;
  void Committed(int64_t checkpoint_id, std::string task_id) override;
  void Goodbye(std::chrono::milliseconds timeout) override;
  void Stop() override;
  bool WaitUntilStopped(std::chrono::steady_clock::time_point deadline) override;
  bool IsConnected() const override { return connected_.load(std::memory_order_relaxed); }
  bool IsStopped() const override;
  PipelineWorkerCounters counters() const override;
  void Post(std::function<void()> fn) override;
  void RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) override;

  // For the runtime's shutdown: no deadline, and not from a runtime thread.
  void WaitUntilStoppedForever();

  void OnAttemptMessage(uint64_t attempt_id, v1::CoordinatorMessage message) override;
  void OnAttemptDone(uint64_t attempt_id, grpc::Status status,
                     std::optional<std::string> leader) override;

 private:
  enum class Phase {
    kIdle,
    kConnecting,
    kConnected,
    kBackingOff,
    kSayingGoodbye,
    kStopping,
    kStopped
  };

  // False if the runtime has shut down (fn is dropped).
  template <class Fn>
  bool PostToStrand(Fn&& fn) {
    return core_->Post(strand_, std::forward<Fn>(fn));
  }
  // Runs fn now when already on strand_ (a handler acking its trigger: no second trip through
  // the queue), else posts it. False if the runtime has shut down (fn is dropped).
  template <class Fn>
  bool RunOnStrand(Fn&& fn) {
    if (!strand_.running_in_this_thread()) return PostToStrand(std::forward<Fn>(fn));
    fn();
    return true;
  }

  // All on strand_.
  void StartAttempt();
  void Send(v1::WorkerMessage message);
  void HandleMessage(uint64_t attempt_id, const v1::CoordinatorMessage& message);
  void HandleAttemptDone(uint64_t attempt_id, const grpc::Status& status,
                         const std::optional<std::string>& leader);
  // After a stream ended UNAVAILABLE: the daemon of the next stream. True when it is the leader
  // `leader` names (to be asked at once), false when it is the next of the list.
  bool ChooseNextDaemon(const std::optional<std::string>& leader);
  // True (and counted when not) when the message is of the newest leadership seen.
  bool Believe(bool current);
  void HandleGoodbye(std::chrono::milliseconds timeout);
  void HandleStop();
  // The next heartbeat is due `after` from now; one is skipped while other messages keep the
  // lease renewed (see there).
  void ArmHeartbeat(std::chrono::steady_clock::duration after);
  // Whether SetPosition was ever called; what the next heartbeat carries (taken out).
  bool PositionsInUse();
  std::map<std::string, int64_t> TakeHeartbeatPositions();
  // A commit the daemon asked for: on_commit, then (auto_commit) `committed` for every task of
  // this stream. strand_ only.
  void Commit(int64_t checkpoint_id);
  // A welcome's restore: on_welcome (the restore handler), its outcome sent as restore_result (an
  // exception is a failure), then a pending commit; or, with the restore withheld, on_state
  // FAILED only (the application is held back). strand_ only.
  void Restore(const v1::Welcome& welcome);
  // The trigger's position for an ack that named none (0: unknown or none).
  int64_t TriggerPosition(int64_t checkpoint_id) const;
  void CancelTimers();
  // Enters Stopped: releases the handlers (and whatever they captured) and wakes waiters.
  void Finish();
  // Handlers run only while the user has not called Stop.
  bool HandlersEnabled() const { return !stop_requested_.load(std::memory_order_acquire); }
  // Runs a user handler (if set and Stop was not called) under handler_mu_, so that Stop() from
  // outside the runtime can wait for a handler that is running at that moment.
  template <class Fn, class... Args>
  void InvokeHandler(const Fn& handler, Args&&... args) {
    if (!handler) return;
    std::lock_guard<std::mutex> lock(handler_mu_);
    if (HandlersEnabled()) handler(std::forward<Args>(args)...);
  }

  // Constant after construction. core_ is first: destroyed last, after the timers and the strand.
  const std::shared_ptr<RuntimeCore> core_;
  const PipelineWorkerOptions options_;
  const Strand strand_;

  // strand_ only.
  PipelineHandlers handlers_;
  Phase phase_ = Phase::kIdle;
  std::shared_ptr<Attempt> attempt_;  // the current stream, until its OnAttemptDone
  uint64_t attempt_id_ = 0;           // fences timers and messages of older attempts
  bool welcomed_this_attempt_ = false;
  bool ever_welcomed_ = false;
  std::chrono::steady_clock::time_point welcomed_at_;
  std::chrono::milliseconds heartbeat_interval_ = kDefaultHeartbeatInterval;
  // When the current stream last took a message to send: every message renews the lease.
  std::chrono::steady_clock::time_point last_sent_at_;
  Backoff backoff_;
  Backoff standby_backoff_;       // backoff_ capped at kStandbyPollMax
  StandbyPoll standby_poll_;      // when standby_backoff_ is the one
  cli::LeaderFollower follower_;  // which daemon the next stream goes to
  EpochFilter epochs_;
  // The positions of the last triggers, by checkpoint id (at most kRememberedTriggers).
  static constexpr size_t kRememberedTriggers = 8;
  std::map<int64_t, int64_t> trigger_positions_;
  boost::asio::steady_timer heartbeat_timer_;
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer goodbye_timer_;

  // SetPosition's, from any thread: every task's highest position, and those the next heartbeat
  // carries (all again after a welcome).
  std::mutex positions_mu_;
  std::map<std::string, int64_t> positions_;         // guarded by positions_mu_
  std::map<std::string, int64_t> unsent_positions_;  // guarded by positions_mu_
  // Tasks whose next SetPosition may go lower (set at each welcome, until that call); their old
  // positions are not sent again. Heartbeats since every position was last sent.
  std::set<std::string> rewindable_;  // guarded by positions_mu_
  int heartbeats_since_full_ = 0;     // guarded by positions_mu_
  static constexpr int kFullPositionsEvery = 10;
  // SetBacklog's, from any thread; what the daemon last heard on this attempt (strand_: reset to
  // false at each welcome, since the daemon forgets a stream's backlog when the stream ends).
  std::atomic<bool> backlog_{false};
  bool backlog_sent_ = false;

  // Held while a handler runs (on strand_), and briefly by Stop() off the runtime's threads.
  std::mutex handler_mu_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> connected_{false};
  std::atomic<uint64_t> attempts_{0};
  std::atomic<uint64_t> connects_{0};
  std::atomic<uint64_t> reconnects_{0};
  std::atomic<uint64_t> disconnects_{0};
  std::atomic<uint64_t> dropped_sends_{0};
  std::atomic<uint64_t> stale_messages_{0};
  std::atomic<uint64_t> leader_redirects_{0};

  mutable std::mutex stopped_mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;  // guarded by stopped_mu_
};

}  // namespace ckpt::sdk::internal
