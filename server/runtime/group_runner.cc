#include "runtime/group_runner.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "common/strand_assert.h"
#include "runtime/pipeline_runner.h"

namespace ckpt {

namespace asio = boost::asio;

GroupRunner::GroupRunner(asio::io_context& io, const StoredGroup& stored, MetadataStore& store,
                         const Clock& clock, DaemonMetrics& metrics, StoreHealth* store_health,
                         GroupOptions options)
    : name_(stored.spec.name),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      store_health_(store_health),
      durable_id_counter_(stored.progress.id_counter),
      strand_(asio::make_strand(io)),
      coordinator_(stored.spec, stored.progress, clock, options),
      wakeup_timer_(strand_),
      deadline_timer_(strand_),
      published_progress_copy_(stored.progress),
      admission_(options.admission),
      admission_ticket_(admission_ ? admission_->NewTicket() : 0) {
  MutexLock lock(progress_mu_);
  published_progress_ = stored.progress;
}

GroupRunner::~GroupRunner() {
  // A group dropped while its round flew or waited must not hold its place for ever.
  if (admission_) admission_->Leave(admission_ticket_);
}

template <typename F>
void GroupRunner::Post(F&& f) {
  asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable {
    if (self->stopped_) return;
    f(*self);
  });
}

void GroupRunner::Start() {
  Post([](GroupRunner& g) { g.Run(g.coordinator_.Start()); });
}

void GroupRunner::Stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->ReleaseAdmission();  // nothing more starts here
    self->wakeup_timer_.cancel();
    self->deadline_timer_.cancel();
    for (auto& done : self->queued_round_waiters_) {
      done(Status::Unavailable("group " + self->name_ + " stopped"), 0);
    }
    self->queued_round_waiters_.clear();
  });
}

void GroupRunner::AddMember(const PipelineKey& key, std::weak_ptr<PipelineRunner> member,
                            int64_t id_floor) {
  Post([key, member = std::move(member), id_floor](GroupRunner& g) mutable {
    if (auto runner = member.lock()) {
      // Its schedule is the group's from now on: GetPipeline shows the group's interval.
      GroupIntervalChanged interval = g.coordinator_.CurrentInterval();
      runner->GroupInterval(interval.ms, std::move(interval.reason));
    }
    g.members_[key] = std::move(member);
    g.Run(g.coordinator_.AddMember(key, id_floor));
  });
}

void GroupRunner::RemoveMember(const PipelineKey& key, std::string why) {
  Post([key, why = std::move(why)](GroupRunner& g) {
    // Aborts go out before the member is let go (EndRound takes them from the round).
    GroupActions actions = g.coordinator_.RemoveMember(key, why);
    g.Run(std::move(actions));
    if (g.coordinator_.CommittingWith(key)) {
      g.leaving_.insert(key);  // it still hears the outcome of the commit its part is in
    } else {
      g.members_.erase(key);
    }
  });
}

void GroupRunner::MemberState(const PipelineKey& key, bool ready, std::string holdup,
                              int64_t predicted_bytes, bool backlog) {
  Post([key, ready, holdup = std::move(holdup), predicted_bytes, backlog](GroupRunner& g) {
    g.Run(g.coordinator_.OnMemberState(key, ready, holdup, predicted_bytes, backlog));
  });
}

void GroupRunner::AskForAdmission(const AdmissionRequest& request) {
  CKPT_ASSERT_ON_STRAND(strand_);
  if (!admission_) return;  // the coordinator asks only when it was given one
  const uint32_t ask = ++admission_asks_;
  const SteadyTime asked_at = clock_.SteadyNow();
  admission_->Ask(admission_ticket_, request, [weak = weak_from_this(), ask, asked_at] {
    if (auto self = weak.lock()) {
      self->Post([ask, asked_at](GroupRunner& g) {
        if (g.admission_asks_ != ask) return;  // left, or asked again, since
        g.metrics_.admission_wait.ObserveMicros(
            std::chrono::duration_cast<std::chrono::microseconds>(g.clock_.SteadyNow() - asked_at)
                .count());
        g.Run(g.coordinator_.OnAdmitted());
      });
    }
  });
}

void GroupRunner::ReleaseAdmission() {
  CKPT_ASSERT_ON_STRAND(strand_);
  ++admission_asks_;  // an answer still on its way is for nothing now
  if (admission_) admission_->Leave(admission_ticket_);
}

void GroupRunner::MemberPositions(const PipelineKey& key, ckpt::MemberPositions positions) {
  Post([key, positions](GroupRunner& g) {
    g.Run(g.coordinator_.OnMemberPositions(key, positions));
  });
}

void GroupRunner::MemberDone(const PipelineKey& key, int64_t checkpoint_id,
                             CheckpointCommit commit) {
  Post([key, checkpoint_id, commit = std::move(commit)](GroupRunner& g) mutable {
    g.Run(g.coordinator_.OnMemberDone(key, checkpoint_id, std::move(commit)));
  });
}

void GroupRunner::MemberCommitted(const PipelineKey& key, int64_t checkpoint_id) {
  Post([key, checkpoint_id](GroupRunner& g) {
    g.Run(g.coordinator_.OnMemberCommitted(key, checkpoint_id));
  });
}

void GroupRunner::MemberFailed(const PipelineKey& key, int64_t checkpoint_id, MemberFailure failure,
                               std::string reason) {
  Post([key, checkpoint_id, failure, reason = std::move(reason)](GroupRunner& g) {
    g.Run(g.coordinator_.OnMemberFailed(key, checkpoint_id, failure, reason));
  });
}

void GroupRunner::RequestRound(CheckpointKind kind, Millis timeout, RoundDone done,
                               MemberCheck check) {
  asio::post(strand_, [self = shared_from_this(), kind, timeout, done = std::move(done),
                       check = std::move(check)]() mutable {
    if (self->stopped_) return done(Status::Unavailable("group " + self->name_ + " stopped"), 0);
    if (check) {
      for (const PipelineKey& member : self->coordinator_.Members()) {
        if (Status s = check(member); !s.ok()) {
          return done(Status(s.code(), "member " + member.ToString() + " of alignment group " +
                                           self->name_ + " is of job " + member.job_id + ": " +
                                           s.message()),
                      0);
        }
      }
    }
    int64_t id = 0;
    std::function<Status(const AdmissionRequest&)> admit_now;
    if (self->admission_) {
      admit_now = [g = self.get()](const AdmissionRequest& request) {
        return g->admission_->AdmitNow(g->admission_ticket_, request);
      };
    }
    auto outcome = self->coordinator_.RequestRound(kind, &id, timeout, admit_now);
    if (!outcome.status.ok()) return done(outcome.status, 0);
    // Started now: the members were sent their StartMemberRound by Run, ahead of `done`.
    // Queued (a savepoint): `done` when it starts or is dropped.
    if (id == 0) self->queued_round_waiters_.push_back(std::move(done));
    self->Run(std::move(outcome.actions));
    if (id != 0) done(Status::Ok(), id);
  });
}

void GroupRunner::UpdateSpec(AlignmentGroupSpec spec) {
  Post([spec = std::move(spec)](GroupRunner& g) { g.Run(g.coordinator_.UpdateSpec(spec)); });
}

void GroupRunner::Inspect(std::function<void(const GroupCoordinator&)> fn) {
  asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] { fn(self->coordinator_); });
}

std::shared_ptr<PipelineRunner> GroupRunner::MemberRunner(const PipelineKey& key) const {
  auto it = members_.find(key);
  return it == members_.end() ? nullptr : it->second.lock();
}

void GroupRunner::Run(GroupActions actions) {
  CKPT_ASSERT_ON_STRAND(strand_);
  for (GroupAction& action : actions) Execute(action);
  if (coordinator_.progress() != published_progress_copy_) {
    published_progress_copy_ = coordinator_.progress();
    MutexLock lock(progress_mu_);
    published_progress_ = published_progress_copy_;
  }
}

GroupProgress GroupRunner::progress() const {
  MutexLock lock(progress_mu_);
  return published_progress_;
}

void GroupRunner::Execute(GroupAction& action) {
  if (stopped_ && (std::holds_alternative<StartMemberRound>(action) ||
                   std::holds_alternative<ArmGroupWakeup>(action) ||
                   std::holds_alternative<ArmGroupDeadline>(action) ||
                   std::holds_alternative<ReserveGroupIds>(action))) {
    return;  // stopped: a round in flight ends, nothing new starts
  }
  if (auto* a = std::get_if<AskAdmission>(&action)) {
    if (!stopped_) AskForAdmission(a->request);
  } else if (std::holds_alternative<LeaveAdmission>(action)) {
    ReleaseAdmission();
  } else if (auto* a = std::get_if<StartMemberRound>(&action)) {
    if (auto member = MemberRunner(a->member)) {
      member->StartGroupRound(a->checkpoint_id, a->kind, a->position);
    } else {
      // Gone without a RemoveMember yet (its runner is being torn down): the round cannot end
      // well; RemoveMember, on its way, aborts it.
      LogLine(LogLevel::kWarn, "member " + a->member.ToString() + " is gone");
    }
  } else if (auto* a = std::get_if<MemberRoundDurable>(&action)) {
    if (auto member = MemberRunner(a->member)) member->GroupRoundDurable(a->checkpoint_id);
  } else if (auto* a = std::get_if<MarkMemberCommitted>(&action)) {
    if (auto member = MemberRunner(a->member)) member->GroupCommitted(a->checkpoint_id);
  } else if (auto* a = std::get_if<AbortMemberRound>(&action)) {
    if (auto member = MemberRunner(a->member)) {
      member->EndGroupRound(a->checkpoint_id, a->outcome, a->reason);
    }
  } else if (auto* a = std::get_if<ArmGroupWakeup>(&action)) {
    wakeup_timer_.expires_at(a->at);
    wakeup_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopped_) return;
      self->Run(self->coordinator_.OnWakeup());
    });
  } else if (auto* a = std::get_if<ArmGroupDeadline>(&action)) {
    deadline_timer_.expires_at(a->at);
    deadline_timer_.async_wait(
        [self = shared_from_this(), id = a->checkpoint_id](const boost::system::error_code& ec) {
          if (ec || self->stopped_) return;
          self->Run(self->coordinator_.OnDeadline(id));
        });
  } else if (std::holds_alternative<CancelGroupDeadline>(action)) {
    deadline_timer_.cancel();
  } else if (auto* a = std::get_if<ReserveGroupIds>(&action)) {
    const int64_t counter = a->new_counter;
    store_.ReserveGroupIds(name_, counter, [self = shared_from_this(), counter](Status s) {
      if (self->store_health_) self->store_health_->Report(s);
      if (s.ok()) {
        // Raised before the completion is posted: a member leaving from now on goes above it.
        int64_t seen = self->durable_id_counter_.load();
        while (seen < counter && !self->durable_id_counter_.compare_exchange_weak(seen, counter)) {
        }
      }
      asio::post(self->strand_, [self, counter, s = std::move(s)] {
        if (self->stopped_) return;
        self->Run(s.ok() ? self->coordinator_.OnIdsReserved(counter)
                         : self->coordinator_.OnIdsReserveFailed(s));
      });
    });
  } else if (auto* a = std::get_if<CommitGroupRound>(&action)) {
    const int64_t id = a->checkpoint_id;
    GroupRoundCommit commit{name_, a->progress_after, std::move(a->members)};
    const SteadyTime queued_at = clock_.SteadyNow();
    store_.CommitGroupRound(commit, [self = shared_from_this(), id, queued_at](Status s) {
      // A group's round fails on a full store as a pipeline's does: StoreHealth hears of it.
      if (self->store_health_) self->store_health_->Report(s);
      self->metrics_.store_commit.ObserveMicros(
          std::chrono::duration_cast<std::chrono::microseconds>(self->clock_.SteadyNow() -
                                                                queued_at)
              .count());
      // Never dropped, not even once stopped (shutdown): what is durable is complete for every
      // member, and each member's part waits for this answer.
      asio::post(self->strand_, [self, id, s = std::move(s)] {
        self->Run(s.ok() ? self->coordinator_.OnCommitted(id)
                         : self->coordinator_.OnCommitFailed(id, s));
        for (const PipelineKey& key : self->leaving_) self->members_.erase(key);
        self->leaving_.clear();
      });
    });
  } else if (auto* a = std::get_if<GroupRoundStarted>(&action)) {
    LogLine(LogLevel::kDebug,
            std::string("round ") + std::to_string(a->checkpoint_id) + " (" +
                CheckpointKindName(a->kind) + ") started" +
                (a->position ? " at position " + std::to_string(a->position) : std::string()));
    if (a->kind != CheckpointKind::kCheckpoint && !queued_round_waiters_.empty()) {
      // The queued savepoint started (its members are already told, above in this Run).
      auto waiters = std::move(queued_round_waiters_);
      queued_round_waiters_.clear();
      for (const auto& done : waiters) done(Status::Ok(), a->checkpoint_id);
    }
  } else if (auto* a = std::get_if<GroupSavepointDropped>(&action)) {
    LogLine(LogLevel::kWarn, "savepoint dropped: " + a->reason);
    for (auto& done : queued_round_waiters_) done(Status::DeadlineExceeded(a->reason), 0);
    queued_round_waiters_.clear();
  } else if (auto* a = std::get_if<GroupIntervalChanged>(&action)) {
    for (const auto& [key, weak] : members_) {
      if (auto member = weak.lock()) member->GroupInterval(a->ms, a->reason);
    }
  } else if (auto* a = std::get_if<GroupRoundFinished>(&action)) {
    ++metrics_.group_rounds_total[static_cast<size_t>(a->result)];
  } else if (auto* a = std::get_if<Log>(&action)) {
    LogLine(a->level, a->text);
  }
}

void GroupRunner::LogLine(LogLevel level, const std::string& text) const {
  switch (level) {
    case LogLevel::kDebug: spdlog::debug("[group {}] {}", name_, text); break;
    case LogLevel::kInfo: spdlog::info("[group {}] {}", name_, text); break;
    case LogLevel::kWarn: spdlog::warn("[group {}] {}", name_, text); break;
    case LogLevel::kError: spdlog::error("[group {}] {}", name_, text); break;
  }
}

}  // namespace ckpt
