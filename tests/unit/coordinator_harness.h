#pragma once
// Drives a PipelineCoordinator by hand: a manual clock, timers that fire when time is advanced past
// them, and a store whose completions the test performs (or lets happen at once).
//
// The coordinator is a CheckedCoordinator (support/coordinator_invariants.h): every call a test
// makes through c(), and every one the harness makes for it (timers, store completions), is
// checked against the invariant model the coordinator fuzzer uses; a broken invariant fails the
// test, naming the step. The check is made where the call is made, since that is where the call
// is known; Apply then records the actions as the runtime would carry them out.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/pipeline_coordinator.h"
#include "support/coordinator_invariants.h"

namespace ckpt::testing {

class ManualClock final : public TestClock {
 public:
  // With ticking on, every reading moves time on by 1 us, as a real clock does between two reads.
  SteadyTime SteadyNow() const override {
    if (ticking_) now_ += std::chrono::microseconds(1);
    return now_;
  }
  void SetTicking(bool on) { ticking_ = on; }
  SteadyTime Peek() const override { return now_; }
  bool Ticking() const override { return ticking_; }
  // Wall time moves with steady time.
  int64_t WallMs() const override {
    return wall_base_ms_ + std::chrono::duration_cast<Millis>(now_ - kStart).count();
  }
  // Exact, to the nanosecond: the coordinator arms wakeups below a millisecond apart.
  void AdvanceTo(SteadyTime t) {
    if (t > now_) now_ = t;
  }

 private:
  static constexpr SteadyTime kStart{Millis(1'000'000)};
  mutable SteadyTime now_{kStart};
  bool ticking_ = false;
  int64_t wall_base_ms_ = 1'700'000'000'000;
};

// The actions of type T among `actions`, in order.
template <typename T>
std::vector<T> ActionsOf(const Actions& actions) {
  std::vector<T> found;
  for (const auto& a : actions) {
    if (auto* t = std::get_if<T>(&a)) found.push_back(*t);
  }
  return found;
}

// The position of the first action of type T, or actions.size().
template <typename T>
size_t IndexOf(const Actions& actions) {
  for (size_t i = 0; i < actions.size(); ++i) {
    if (std::holds_alternative<T>(actions[i])) return i;
  }
  return actions.size();
}

inline PipelineSpec MakeSpec(std::vector<std::string> tasks = {"a", "b"}) {
  PipelineSpec spec;
  spec.key = {"job", "pipe"};
  spec.task_ids = std::move(tasks);
  spec.interval_ms = 1000;
  spec.timeout_ms = 5000;
  spec.min_pause_ms = 0;
  spec.tolerable_failures = 0;
  return spec;
}

class Harness {
 public:
  explicit Harness(PipelineSpec spec = MakeSpec(), int64_t id_counter = 0,
                   CoordinatorOptions options = {}) {
    StoredPipeline stored;
    stored.record.spec = std::move(spec);
    stored.id_counter = id_counter;
    Build(stored, options);
  }
  Harness(const StoredPipeline& stored, CoordinatorOptions options) { Build(stored, options); }

  void Build(const StoredPipeline& stored, CoordinatorOptions options) {
    options.missing_tasks_warn_interval = Millis(10000);
    coordinator = std::make_unique<CheckedCoordinator>(
        stored, clock, options, [](const std::string& message) { ADD_FAILURE() << message; });
  }

  CheckedCoordinator& c() { return *coordinator; }

  // Applies actions the way the runtime would, recording them.
  void Apply(const Actions& actions) {
    for (const auto& action : actions) {
      all.push_back(action);
      if (auto* a = std::get_if<ArmWakeup>(&action)) wakeup = a->at;
      if (std::holds_alternative<CancelWakeup>(action)) wakeup.reset();
      if (auto* a = std::get_if<ArmTimeout>(&action)) timeout = *a;
      if (std::holds_alternative<CancelTimeout>(action)) timeout.reset();
      if (auto* a = std::get_if<SendTrigger>(&action)) triggers.push_back(*a);
      if (auto* a = std::get_if<SendAbort>(&action)) aborts.push_back(*a);
      if (auto* a = std::get_if<SendComplete>(&action)) completes.push_back(*a);
      if (auto* a = std::get_if<EndSession>(&action)) ended.push_back(*a);
      if (auto* a = std::get_if<RecordTriggerDelay>(&action)) {
        delays.push_back(a->delay);
        holds.push_back(a->held);
      }
      if (auto* a = std::get_if<RoundFinished>(&action)) finished.push_back(*a);
      if (auto* a = std::get_if<IgnoredMessage>(&action))
        ignored.push_back(IgnoredReasonLabel(a->reason));
      if (auto* a = std::get_if<PersistRecord>(&action)) {
        persisted.push_back(a->record);
        persisted_records.push_back(a->record);
      }
      if (auto* a = std::get_if<PersistProgress>(&action)) {
        PipelineRecord record;
        static_cast<PipelineProgress&>(record) = a->progress;
        record.spec = coordinator->spec();
        persisted.push_back(record);
      }
      if (auto* a = std::get_if<Log>(&action)) logs.push_back(*a);
      if (auto* a = std::get_if<AskAdmission>(&action)) asks.push_back(*a);
      if (std::holds_alternative<LeaveAdmission>(action)) ++leaves;
      if (auto* a = std::get_if<ReserveIds>(&action)) {
        reserve_requests.push_back(a->new_counter);
        if (auto_reserve) Apply(coordinator->OnIdsReserved(a->new_counter));
      }
      if (auto* a = std::get_if<CommitCheckpoint>(&action)) {
        commits.push_back(*a);
        if (auto_commit) Apply(coordinator->OnCommitted(a->commit.checkpoint.checkpoint_id));
      }
      if (auto* a = std::get_if<SendAllCommitted>(&action)) all_committed.push_back(*a);
      if (auto* a = std::get_if<PersistCommitMark>(&action)) {
        marks.push_back(*a);
        if (auto_commit) Apply(coordinator->OnCommitMarked(a->checkpoint_id));
      }
    }
  }

  void Start(bool restarted = false) { Apply(coordinator->Start(restarted)); }

  // Registers every task of the spec on one session (id 1 by default).
  void RegisterAll(SessionId session = 1, const std::string& worker = "w1") {
    auto reg =
        coordinator->OnRegister(session, worker, coordinator->Describe().spec.task_ids, false);
    ASSERT_TRUE(reg.status.ok()) << reg.status.ToString();
    Apply(reg.actions);
  }

  // Moves time forward by `d`, firing the timers that come due, in order.
  void RunFor(SteadyTime::duration d) {
    const SteadyTime end = clock.SteadyNow() + d;
    for (;;) {
      std::optional<SteadyTime> next;
      bool is_timeout = false;
      if (wakeup && *wakeup <= end) next = wakeup;
      if (timeout && timeout->at <= end && (!next || timeout->at < *next)) {
        next = timeout->at;
        is_timeout = true;
      }
      if (!next) break;
      clock.AdvanceTo(*next);
      if (is_timeout) {
        const int64_t id = timeout->checkpoint_id;
        timeout.reset();
        Apply(coordinator->FireTimeout(id));
      } else {
        wakeup.reset();
        Apply(coordinator->FireWakeup());
      }
    }
    clock.AdvanceTo(end);
  }

  void AckAll(int64_t id, SessionId session = 1) {
    for (const auto& task : coordinator->Describe().spec.task_ids) {
      Apply(coordinator->OnAck(session, id, task, TaskState{"mem://" + task, 1, "c"}));
    }
  }

  // Every task of the spec commits `id` on `session`.
  void CommitAll(int64_t id, SessionId session = 1) {
    for (const auto& task : coordinator->Describe().spec.task_ids) {
      Apply(coordinator->OnTaskCommitted(session, id, task));
    }
  }

  int64_t LastTriggerId() const { return triggers.empty() ? 0 : triggers.back().checkpoint_id; }

  // The usual opening: start, register every task on session 1, let the first (immediate) trigger
  // fire. Returns its checkpoint id.
  int64_t StartToFirstTrigger() {
    Start();
    RegisterAll();
    RunFor(Millis(0));
    return LastTriggerId();
  }

  bool LoggedContaining(LogLevel level, const std::string& fragment) const {
    for (const auto& l : logs) {
      if (l.level == level && l.text.find(fragment) != std::string::npos) return true;
    }
    return false;
  }

  ManualClock clock;
  std::unique_ptr<CheckedCoordinator> coordinator;
  bool auto_reserve = true;
  bool auto_commit = true;

  std::optional<SteadyTime> wakeup;
  std::optional<ArmTimeout> timeout;
  std::vector<Action> all;
  std::vector<SendTrigger> triggers;
  std::vector<SendAbort> aborts;
  std::vector<SendComplete> completes;
  std::vector<EndSession> ended;
  std::vector<std::chrono::microseconds> delays;
  std::vector<std::chrono::microseconds> holds;  // RecordTriggerDelay::held, beside `delays`
  std::vector<RoundFinished> finished;
  std::vector<std::string> ignored;
  // Every write of the record or its progress, as the stored record reads after it.
  std::vector<PipelineRecord> persisted;
  // The whole-record writes only (PersistRecord).
  std::vector<PipelineRecord> persisted_records;
  std::vector<Log> logs;
  std::vector<AskAdmission> asks;  // admission asked for (the test answers: c().OnAdmitted())
  int leaves = 0;                  // LeaveAdmission
  std::vector<int64_t> reserve_requests;
  std::vector<CommitCheckpoint> commits;
  std::vector<SendAllCommitted> all_committed;
  std::vector<PersistCommitMark> marks;
};

}  // namespace ckpt::testing
