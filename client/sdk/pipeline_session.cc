#include "sdk/pipeline_session.h"

#include <algorithm>
#include <cstdio>

#include "sdk/grpc_status_code.h"
#include "sdk/messages.h"
#include "sdk/retry_policy.h"

namespace ckpt::sdk::internal {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

PipelineSession::PipelineSession(std::shared_ptr<RuntimeCore> core, PipelineWorkerOptions options,
                                 PipelineHandlers handlers)
    : core_(std::move(core)),
      options_(std::move(options)),
      strand_(boost::asio::make_strand(core_->io_context())),
      handlers_(std::move(handlers)),
      backoff_(BackoffPolicy{options_.backoff_initial, options_.backoff_max}, core_->NextSeed()),
      standby_backoff_(
          BackoffPolicy{options_.backoff_initial, std::min(options_.backoff_max, kStandbyPollMax)},
          core_->NextSeed()),
      standby_poll_(kStandbyPollWindow, core_->servers().size() > 1),
      follower_(core_->servers()),
      heartbeat_timer_(strand_),
      retry_timer_(strand_),
      goodbye_timer_(strand_) {}

PipelineSession::~PipelineSession() { core_->Unregister(this); }

// ---- Public methods: any thread; they only post. ----

void PipelineSession::Start() {
  PostToStrand([self = shared_from_this()] {
    if (self->phase_ == Phase::kIdle && self->HandlersEnabled()) self->StartAttempt();
  });
}

void PipelineSession::Ack(int64_t checkpoint_id, std::string task_id, TaskStateInfo state,
                          AckFigures figures, std::optional<int64_t> position) {
  if (!RunOnStrand([self = shared_from_this(), position,
                    message = MakeAck(checkpoint_id, std::move(task_id), std::move(state), figures,
                                      position.value_or(0))]() mutable {
        // Left out: where the trigger asked (known only here, on the strand that saw it).
        if (!position)
          message.mutable_ack()->set_position(self->TriggerPosition(message.ack().checkpoint_id()));
        self->Send(std::move(message));
      })) {
    dropped_sends_.fetch_add(1, std::memory_order_relaxed);
  }
}

void PipelineSession::Decline(int64_t checkpoint_id, std::string task_id, std::string reason,
                              bool expired, int64_t position) {
  if (!RunOnStrand(
          [self = shared_from_this(),
           message = MakeDecline(checkpoint_id, std::move(task_id), std::move(reason), expired,
                                 position)]() mutable { self->Send(std::move(message)); })) {
    dropped_sends_.fetch_add(1, std::memory_order_relaxed);
  }
}

void PipelineSession::Committed(int64_t checkpoint_id, std::string task_id) {
  if (!RunOnStrand([self = shared_from_this(),
                    message = MakeCommitted(checkpoint_id, std::move(task_id))]() mutable {
        self->Send(std::move(message));
      })) {
    dropped_sends_.fetch_add(1, std::memory_order_relaxed);
  }
}

void PipelineSession::Commit(int64_t checkpoint_id) {
  InvokeHandler(handlers_.on_commit, checkpoint_id);
  if (!options_.auto_commit || !HandlersEnabled()) return;
  for (const std::string& task : options_.task_ids) Send(MakeCommitted(checkpoint_id, task));
}

void PipelineSession::Restore(const v1::Welcome& welcome) {
  if (welcome.restore_withheld()) {
    // The pipeline has state it cannot offer: the application is held back (on_welcome would
    // start it as a fresh pipeline) until an operator restores the pipeline, which ends this
    // stream; the next welcome carries the new restore point.
    InvokeHandler(handlers_.on_state, PipelineState::kFailed,
                  "the pipeline's restore point failed and none replaced it; the application is "
                  "held back until an operator restores it (ckptctl pipeline why)");
    return;
  }
  const v1::RestorePoint& restore = welcome.restore();
  // The restore handler's outcome goes to the daemon (docs/PROTOCOL.md, "Verified restore"): an
  // exception is a failed restore, which moves the pipeline to an older restore point.
  std::string failure;
  try {
    InvokeHandler(handlers_.on_welcome, FromProto(welcome));
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "the restore handler threw";
  } catch (...) {
    failure = "the restore handler threw";
  }
  if (restore.checkpoint_id() != 0 && !options_.task_ids.empty()) {
    Send(MakeRestoreResult(restore.checkpoint_id(), options_.task_ids.front(), failure.empty(),
                           failure));
  }
  if (!failure.empty()) {
    std::fprintf(stderr, "ckpt worker sdk: restoring checkpoint %lld failed: %s\n",
                 static_cast<long long>(restore.checkpoint_id()), failure.c_str());
    return;
  }
  // The restore handler committed what the COMMITTING restore point held back.
  if (restore.commit_pending()) Commit(restore.checkpoint_id());
}

void PipelineSession::SetPosition(const std::string& task_id, int64_t position) {
  if (position < 0) return;
  std::lock_guard<std::mutex> lock(positions_mu_);
  auto [it, inserted] = positions_.try_emplace(task_id, position);
  if (!inserted) {
    // The first position after a welcome is sent whatever it is, the same as before included:
    // the daemon knows none of this task's until it is.
    const bool first_since_welcome = rewindable_.erase(task_id) > 0;
    if (!first_since_welcome && position <= it->second) return;
    it->second = position;
  }
  unsent_positions_[task_id] = position;
}

void PipelineSession::SetBacklog(bool backlog) {
  if (backlog_.exchange(backlog) == backlog) return;
  // Said at once rather than at the next heartbeat, on the strand as every send is.
  RunOnStrand([self = shared_from_this()] { self->SendBacklogIfChanged(); });
}

void PipelineSession::SendBacklogIfChanged() {
  if (phase_ != Phase::kConnected || !welcomed_this_attempt_) return;  // said once welcomed
  if (backlog_.load() == backlog_sent_) return;
  // The backlog alone: positions keep to their heartbeats (after a welcome they wait for the
  // tasks' next SetPosition).
  backlog_sent_ = backlog_.load();
  Send(MakeHeartbeat({}, backlog_sent_));
}

int64_t PipelineSession::TriggerPosition(int64_t checkpoint_id) const {
  auto it = trigger_positions_.find(checkpoint_id);
  return it == trigger_positions_.end() ? 0 : it->second;
}

void PipelineSession::RequestSavepoint(std::string target, bool stop) {
  if (!RunOnStrand([self = shared_from_this(),
                    message = MakeSavepointRequest(std::move(target), stop)]() mutable {
        self->Send(std::move(message));
      })) {
    dropped_sends_.fetch_add(1, std::memory_order_relaxed);
  }
}

void PipelineSession::Goodbye(milliseconds timeout) {
  PostToStrand([self = shared_from_this(), timeout] { self->HandleGoodbye(timeout); });
}

void PipelineSession::Stop() {
  // Takes effect for handlers at once; the stream is cancelled on the strand.
  stop_requested_.store(true, std::memory_order_release);
  // Off the runtime's threads, also wait for a handler running right now: after Stop() returns,
  // what the handlers refer to may go. (On a runtime thread that could wait for ourselves, or for
  // a handler that is stopping us.)
  if (!core_->RunningInThisThread()) {
    std::lock_guard<std::mutex> wait_for_handler(handler_mu_);
  }
  PostToStrand([self = shared_from_this()] { self->HandleStop(); });
}

void PipelineSession::Post(std::function<void()> fn) {
  // Not through InvokeHandler: the user's own work runs whether or not Stop was called (see
  // PipelineWorker::Post), and the handler mutex is only for the handlers.
  if (fn) PostToStrand(std::move(fn));
}

void PipelineSession::RunAfter(milliseconds delay, std::function<void()> fn) {
  if (fn) core_->RunAfter(strand_, delay, std::move(fn));
}

bool PipelineSession::WaitUntilStopped(steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(stopped_mu_);
  // On a runtime thread the wait could be for ourselves (a single-thread runtime, or our strand).
  if (core_->RunningInThisThread()) return stopped_;
  return stopped_cv_.wait_until(lock, deadline, [this] { return stopped_; });
}

void PipelineSession::WaitUntilStoppedForever() {
  std::unique_lock<std::mutex> lock(stopped_mu_);
  stopped_cv_.wait(lock, [this] { return stopped_; });
}

bool PipelineSession::IsStopped() const {
  std::lock_guard<std::mutex> lock(stopped_mu_);
  return stopped_;
}

PipelineWorkerCounters PipelineSession::counters() const {
  PipelineWorkerCounters counters;
  counters.attempts = attempts_.load(std::memory_order_relaxed);
  counters.connects = connects_.load(std::memory_order_relaxed);
  counters.reconnects = reconnects_.load(std::memory_order_relaxed);
  counters.disconnects = disconnects_.load(std::memory_order_relaxed);
  counters.dropped_sends = dropped_sends_.load(std::memory_order_relaxed);
  counters.stale_messages = stale_messages_.load(std::memory_order_relaxed);
  counters.leader_redirects = leader_redirects_.load(std::memory_order_relaxed);
  return counters;
}

// ---- Attempt callbacks: gRPC threads; they only post. ----

void PipelineSession::OnAttemptMessage(uint64_t attempt_id, v1::CoordinatorMessage message) {
  PostToStrand([self = shared_from_this(), attempt_id, message = std::move(message)] {
    self->HandleMessage(attempt_id, message);
  });
}

void PipelineSession::OnAttemptDone(uint64_t attempt_id, grpc::Status status,
                                    std::optional<std::string> leader) {
  PostToStrand(
      [self = shared_from_this(), attempt_id, status = std::move(status),
       leader = std::move(leader)] { self->HandleAttemptDone(attempt_id, status, leader); });
}

// ---- The state machine: strand_ only. ----

void PipelineSession::StartAttempt() {
  ++attempt_id_;
  welcomed_this_attempt_ = false;
  phase_ = Phase::kConnecting;
  attempts_.fetch_add(1, std::memory_order_relaxed);
  epochs_.OnNewStream();
  // Not on the first hello (see PipelineWorkerOptions::takeover_on_reconnect).
  const bool takeover = options_.takeover_on_reconnect && attempt_id_ > 1;
  attempt_ = core_->StartAttempt(follower_.current(), attempt_id_, MakeHello(options_, takeover),
                                 shared_from_this());
}

void PipelineSession::Send(v1::WorkerMessage message) {
  if (phase_ == Phase::kConnected && attempt_ && attempt_->Send(std::move(message))) {
    last_sent_at_ = steady_clock::now();
    return;
  }
  dropped_sends_.fetch_add(1, std::memory_order_relaxed);
}

void PipelineSession::HandleMessage(uint64_t attempt_id, const v1::CoordinatorMessage& message) {
  if (attempt_id != attempt_id_ || !attempt_) return;
  if (phase_ != Phase::kConnecting && phase_ != Phase::kConnected &&
      phase_ != Phase::kSayingGoodbye) {
    return;
  }
  switch (message.msg_case()) {
    case v1::CoordinatorMessage::kWelcome: {
      if (welcomed_this_attempt_) return;  // a second welcome means nothing new
      welcomed_this_attempt_ = true;
      follower_.Succeeded();  // this daemon serves: the next stream comes back here first
      const bool current = Believe(epochs_.AcceptWelcome(message.welcome().leader_epoch()));
      connects_.fetch_add(1, std::memory_order_relaxed);
      if (ever_welcomed_) reconnects_.fetch_add(1, std::memory_order_relaxed);
      ever_welcomed_ = true;
      welcomed_at_ = steady_clock::now();
      const int64_t interval_ms = message.welcome().heartbeat_interval_ms();
      heartbeat_interval_ = interval_ms > 0 ? milliseconds(interval_ms) : kDefaultHeartbeatInterval;
      if (phase_ == Phase::kConnecting) {
        phase_ = Phase::kConnected;
        connected_.store(true, std::memory_order_relaxed);
        ArmHeartbeat(heartbeat_interval_);
      }
      // The daemon forgot this stream's backlog with the last stream: said again, at once.
      backlog_sent_ = false;  // the daemon forgot the last stream's backlog with it
      if (current) {
        // A new session: the daemon forgot what the last one reported, and the engine may go
        // back to the restore point's position. Until a task's next SetPosition, what it had
        // reported is not sent again: a position from before a restore would ask the next
        // rounds for a position the task is far from.
        std::lock_guard<std::mutex> lock(positions_mu_);
        unsent_positions_.clear();
        rewindable_.clear();
        for (const auto& [task, position] : positions_) rewindable_.insert(task);
      }
      if (current) SendBacklogIfChanged();  // said again on this stream, at once
      // A deposed leader's stream stays up (it ends when that daemon exits), but says nothing.
      if (current) Restore(message.welcome());
      return;
    }
    case v1::CoordinatorMessage::kTrigger:
      if (!Believe(epochs_.AcceptTrigger(message.trigger().leader_epoch()))) return;
      trigger_positions_[message.trigger().checkpoint_id()] = message.trigger().position();
      while (trigger_positions_.size() > kRememberedTriggers) {
        trigger_positions_.erase(trigger_positions_.begin());
      }
      InvokeHandler(handlers_.on_trigger, FromProto(message.trigger()));
      return;
    case v1::CoordinatorMessage::kAbort:
      if (!Believe(epochs_.AcceptOfStream())) return;
      InvokeHandler(handlers_.on_abort, message.abort().checkpoint_id(), message.abort().reason());
      return;
    case v1::CoordinatorMessage::kComplete:
      if (!Believe(epochs_.AcceptOfStream())) return;
      InvokeHandler(handlers_.on_complete, message.complete().checkpoint_id(),
                    FromProto(message.complete().kind()));
      if (message.complete().commit()) Commit(message.complete().checkpoint_id());
      return;
    case v1::CoordinatorMessage::kAllCommitted:
      if (!Believe(epochs_.AcceptOfStream())) return;
      InvokeHandler(handlers_.on_all_committed, message.all_committed().checkpoint_id());
      return;
    case v1::CoordinatorMessage::kState:
      InvokeHandler(handlers_.on_state, FromProto(message.state().state()),
                    message.state().reason());
      return;
    case v1::CoordinatorMessage::kSavepointRefused:
      InvokeHandler(handlers_.on_savepoint_refused, message.savepoint_refused().reason());
      return;
    case v1::CoordinatorMessage::kRelease: {
      if (!Believe(epochs_.AcceptOfStream())) return;
      const auto& ids = message.release().checkpoint_ids();
      InvokeHandler(handlers_.on_release, std::vector<int64_t>(ids.begin(), ids.end()));
      return;
    }
    default: return;  // a message kind this SDK does not know yet
  }
}

bool PipelineSession::Believe(bool current) {
  if (!current) stale_messages_.fetch_add(1, std::memory_order_relaxed);
  return current;
}

bool PipelineSession::ChooseNextDaemon(const std::optional<std::string>& leader) {
  // A leader named by a daemon gets the token only as an address of the list would.
  if (leader && !leader->empty() && core_->MayConnectTo(*leader) &&
      follower_.FollowLeader(*leader)) {
    leader_redirects_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Down, or a standby that knows no leader (or one named too many times in a row): the next
  // daemon of the list, round after round.
  if (!follower_.NextServer()) follower_.Restart();
  return false;
}

void PipelineSession::HandleAttemptDone(uint64_t attempt_id, const grpc::Status& status,
                                        const std::optional<std::string>& leader) {
  if (attempt_id != attempt_id_ || !attempt_) return;
  const bool over_session = attempt_->over_session();
  attempt_.reset();
  connected_.store(false, std::memory_order_relaxed);
  heartbeat_timer_.cancel();
  goodbye_timer_.cancel();
  if (phase_ == Phase::kSayingGoodbye || phase_ == Phase::kStopping) {
    Finish();
    return;
  }
  if (phase_ != Phase::kConnecting && phase_ != Phase::kConnected) return;  // no stream otherwise

  const bool was_connected = welcomed_this_attempt_;
  if (over_session && !was_connected && status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    // A daemon from before Session: the same hello again at once, over Connect.
    core_->SessionUnsupported(follower_.current());
    StartAttempt();
    return;
  }
  disconnects_.fetch_add(1, std::memory_order_relaxed);
  const bool was_stable = was_connected && steady_clock::now() - welcomed_at_ >= kStableSession;
  if (was_stable) {
    backoff_.Reset();
    standby_backoff_.Reset();
  }
  // A trailer (even empty) means an HA daemon answered as a standby: a takeover is under way. So
  // may a leader lost (standby_poll.h).
  standby_poll_.StreamEnded(was_connected, leader.has_value(),
                            was_stable && status.error_code() == grpc::StatusCode::UNAVAILABLE,
                            steady_clock::now());
  const bool poll_standby = standby_poll_.Active(steady_clock::now());

  Disconnect info;
  info.code = FromGrpc(status.error_code());
  info.message = status.error_message();
  info.was_connected = was_connected;
  const StreamEndAction action = ClassifyStreamEnd(info.code, info.message);
  if (action == StreamEndAction::kGiveUp) {
    InvokeHandler(handlers_.on_disconnected, info);
    Finish();
    return;
  }
  // Only UNAVAILABLE says "not here": other ends (an expired lease, our old stream still seen)
  // are retried at the same daemon.
  const bool to_leader =
      status.error_code() == grpc::StatusCode::UNAVAILABLE && ChooseNextDaemon(leader);
  // The leader is asked at once: the standby's refusal says nothing about the leader's load.
  const milliseconds delay = to_leader                                 ? milliseconds(0)
                             : action == StreamEndAction::kRetrySlowly ? backoff_.AtMax()
                             : poll_standby                            ? standby_backoff_.Next()
                                                                       : backoff_.Next();
  info.will_retry = true;
  info.retry_in = delay;
  phase_ = Phase::kBackingOff;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait(
      [self = shared_from_this(), id = attempt_id_](const boost::system::error_code& error) {
        // A cancelled timer's handler may already be queued: check the phase, not only the error.
        if (error || self->phase_ != Phase::kBackingOff || self->attempt_id_ != id) return;
        self->StartAttempt();
      });
  InvokeHandler(handlers_.on_disconnected, info);
}

void PipelineSession::HandleGoodbye(milliseconds timeout) {
  switch (phase_) {
    case Phase::kIdle:
    case Phase::kBackingOff: Finish(); return;
    case Phase::kConnecting:
    case Phase::kConnected:
      // Before the welcome too: hello is already first in the stream's queue.
      attempt_->Send(MakeGoodbye());
      phase_ = Phase::kSayingGoodbye;
      connected_.store(false, std::memory_order_relaxed);
      heartbeat_timer_.cancel();
      goodbye_timer_.expires_after(timeout);
      goodbye_timer_.async_wait(
          [self = shared_from_this(), id = attempt_id_](const boost::system::error_code& error) {
            if (error || self->phase_ != Phase::kSayingGoodbye || self->attempt_id_ != id) return;
            if (self->attempt_) self->attempt_->Cancel();
          });
      return;
    default: return;
  }
}

void PipelineSession::HandleStop() {
  switch (phase_) {
    case Phase::kIdle:
    case Phase::kBackingOff: Finish(); return;
    case Phase::kConnecting:
    case Phase::kConnected:
    case Phase::kSayingGoodbye:
      phase_ = Phase::kStopping;
      connected_.store(false, std::memory_order_relaxed);
      CancelTimers();
      attempt_->Cancel();  // HandleAttemptDone finishes
      return;
    default: return;
  }
}

void PipelineSession::ArmHeartbeat(steady_clock::duration after) {
  heartbeat_timer_.expires_after(after);
  heartbeat_timer_.async_wait(
      [self = shared_from_this(), id = attempt_id_](const boost::system::error_code& error) {
        if (error || self->phase_ != Phase::kConnected || self->attempt_id_ != id) return;
        // Every message renews the lease: while acks and declines go out, a heartbeat says
        // nothing new (20,000 busy streams would send 6,700 a second for nothing). With positions
        // in use every heartbeat goes out: it carries them.
        const steady_clock::duration quiet = steady_clock::now() - self->last_sent_at_;
        if (quiet < self->heartbeat_interval_ && !self->PositionsInUse() &&
            self->backlog_.load() == self->backlog_sent_) {
          self->ArmHeartbeat(self->heartbeat_interval_ - quiet);  // a whole interval quiet
          return;
        }
        self->backlog_sent_ = self->backlog_.load();
        self->Send(MakeHeartbeat(self->TakeHeartbeatPositions(), self->backlog_sent_));
        self->ArmHeartbeat(self->heartbeat_interval_);
      });
}

bool PipelineSession::PositionsInUse() {
  std::lock_guard<std::mutex> lock(positions_mu_);
  return !positions_.empty();
}

std::map<std::string, int64_t> PipelineSession::TakeHeartbeatPositions() {
  std::lock_guard<std::mutex> lock(positions_mu_);
  if (++heartbeats_since_full_ >= kFullPositionsEvery) {
    // Now and then every position set since the welcome: a pipeline that took a
    // position_interval since is not left waiting for a task that stands still.
    heartbeats_since_full_ = 0;
    for (const auto& [task, position] : positions_) {
      if (!rewindable_.count(task)) unsent_positions_[task] = position;
    }
  }
  std::map<std::string, int64_t> positions;
  positions.swap(unsent_positions_);
  return positions;
}

void PipelineSession::CancelTimers() {
  heartbeat_timer_.cancel();
  retry_timer_.cancel();
  goodbye_timer_.cancel();
}

void PipelineSession::Finish() {
  phase_ = Phase::kStopped;
  connected_.store(false, std::memory_order_relaxed);
  CancelTimers();
  attempt_.reset();
  // Whatever the handlers captured is released now, which breaks cycles through user objects.
  handlers_ = PipelineHandlers{};
  {
    std::lock_guard<std::mutex> lock(stopped_mu_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

}  // namespace ckpt::sdk::internal
