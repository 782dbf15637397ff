// libFuzzer target: PipelineCoordinator's event handling. The input is decoded as a short header
// (how the pipeline was stored and how the world behaves) and a sequence of events: time passing,
// timers firing (due, stale, spurious), worker sessions registering, ending, acking and declining
// with arbitrary ids, the store completing or failing what it was handed (or reporting a wrong id),
// and operator calls. Actions are carried out the way the runtime does (timers armed and replaced,
// store writes queued), and after every coordinator call the invariants below are checked; a
// broken one prints what broke and traps (the check does not depend on NDEBUG).
//
// Invariants (CONTRACT.md "Semantics every build keeps" and "Precise rules"):
//   - at most one round pending (a trigger only when no round is open; HasPendingRound agrees);
//   - trigger ids strictly increase, are above the stored counter the pipeline started from and
//     never above the highest counter the store confirmed durable;
//   - SendComplete only for the id handed to the store (CommitCheckpoint) and reported durable by
//     it (OnCommitted of that id), at most once per id; nothing complete before durable; a round
//     with the store is never aborted;
//   - a SendTrigger only while the pipeline is RUNNING with every task registered, to every live
//     session, tagged with the current generation; never after Delete or BeginShutdown;
//   - the generation never decreases (status, welcome, persisted records);
//   - periodic triggers respect interval_ms and min_pause_ms;
//   - a pending round not yet with the store always has its timeout armed, and an idle RUNNING
//     pipeline always has a wakeup armed or an id reservation in flight (the schedule never stops);
//   - more than tolerable_failures consecutive counted failures leave the pipeline FAILED;
//   - a queued savepoint goes before any periodic trigger, starts as soon as it can, and does not
//     stay queued while PAUSED, FAILED, STOPPED or after Delete;
//   - status (pending id, completed_count, last completed id, registered tasks) agrees with the
//     actions seen.
// After Delete only time and timer handlers reach the coordinator, as in runtime/pipeline_runner.
//
// CKPT_FUZZ_VERBOSE=1 prints every event and action (to replay a reproducer by hand).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/pipeline_coordinator.h"
#include "core/spec_validation.h"

namespace ckpt {
namespace {

bool g_verbose = false;

// --------------------------------------------------------------------------------------------
// Input

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  // Past the end: zeros, so a truncated event still decodes.
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// --------------------------------------------------------------------------------------------
// Clock: steady and wall time move together, by hand. Optionally every steady reading moves time
// on by 1 us, as a real clock does between two reads; the model reads without ticking.

class FuzzClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override {
    if (ticking_) now_ += std::chrono::microseconds(1);
    return now_;
  }
  int64_t WallMs() const override { return wall_ms_; }
  SteadyTime Peek() const { return now_; }
  void SetTicking(bool on) { ticking_ = on; }
  bool ticking() const { return ticking_; }
  void Advance(std::chrono::microseconds d) {
    now_ += d;
    wall_ms_ = wall_base_ + std::chrono::duration_cast<Millis>(now_ - start_).count();
  }
  void AdvanceTo(SteadyTime t) {
    if (t > now_) Advance(std::chrono::duration_cast<std::chrono::microseconds>(t - now_));
  }

 private:
  const SteadyTime start_{Millis(1'000'000)};
  mutable SteadyTime now_{start_};
  bool ticking_ = false;
  const int64_t wall_base_ = 1'700'000'000'000;
  int64_t wall_ms_ = wall_base_;
};

// --------------------------------------------------------------------------------------------
// Which coordinator call produced a batch of actions.

enum class Call {
  kStart, kWakeup, kTimeout, kRegister, kSessionEnded, kAck, kDecline, kIdsReserved,
  kIdsReserveFailed, kCommitted, kCommitFailed, kPersistFailed, kPause, kResume, kTriggerNow,
  kSavepoint, kShutdown, kUpdateSpec, kDelete, kStoreWritable,
};

const char* CallName(Call c) {
  switch (c) {
    case Call::kStart: return "Start";
    case Call::kWakeup: return "OnWakeup";
    case Call::kTimeout: return "OnTimeout";
    case Call::kRegister: return "OnRegister";
    case Call::kSessionEnded: return "OnSessionEnded";
    case Call::kAck: return "OnAck";
    case Call::kDecline: return "OnDecline";
    case Call::kIdsReserved: return "OnIdsReserved";
    case Call::kIdsReserveFailed: return "OnIdsReserveFailed";
    case Call::kCommitted: return "OnCommitted";
    case Call::kCommitFailed: return "OnCommitFailed";
    case Call::kPersistFailed: return "OnPersistFailed";
    case Call::kPause: return "Pause";
    case Call::kResume: return "Resume";
    case Call::kTriggerNow: return "TriggerCheckpoint";
    case Call::kSavepoint: return "RequestSavepoint";
    case Call::kShutdown: return "BeginShutdown";
    case Call::kUpdateSpec: return "UpdateSpec";
    case Call::kDelete: return "Delete";
    case Call::kStoreWritable: return "OnStoreWritable";
  }
  return "?";
}

struct CallInfo {
  Call call;
  int64_t id = 0;             // OnCommitted/OnCommitFailed/OnTimeout: the id passed
  bool store_reported = false;  // OnCommitted: the id is the commit the store was handed
};

std::string Describe(const Action& action) {
  if (auto* a = std::get_if<SendTrigger>(&action)) {
    return "SendTrigger id=" + std::to_string(a->checkpoint_id) + " kind=" +
           CheckpointKindName(a->kind) + " gen=" + std::to_string(a->generation) + " to=" +
           std::to_string(a->to.size());
  }
  if (auto* a = std::get_if<SendAbort>(&action)) {
    return "SendAbort id=" + std::to_string(a->checkpoint_id) + " (" + a->reason + ")";
  }
  if (auto* a = std::get_if<SendComplete>(&action)) {
    return "SendComplete id=" + std::to_string(a->checkpoint_id);
  }
  if (auto* a = std::get_if<EndSession>(&action)) {
    return "EndSession " + std::to_string(a->session) + " " + a->status.ToString();
  }
  if (std::holds_alternative<ArmWakeup>(action)) return "ArmWakeup";
  if (std::holds_alternative<CancelWakeup>(action)) return "CancelWakeup";
  if (auto* a = std::get_if<ArmTimeout>(&action)) {
    return "ArmTimeout id=" + std::to_string(a->checkpoint_id);
  }
  if (std::holds_alternative<CancelTimeout>(action)) return "CancelTimeout";
  if (auto* a = std::get_if<ReserveIds>(&action)) {
    return "ReserveIds " + std::to_string(a->new_counter);
  }
  if (auto* a = std::get_if<PersistRecord>(&action)) {
    return "PersistRecord gen=" + std::to_string(a->record.generation);
  }
  if (auto* a = std::get_if<PersistProgress>(&action)) {
    return "PersistProgress gen=" + std::to_string(a->progress.generation);
  }
  if (auto* a = std::get_if<CommitCheckpoint>(&action)) {
    return "CommitCheckpoint id=" + std::to_string(a->commit.checkpoint.checkpoint_id);
  }
  if (std::holds_alternative<RecordTriggerDelay>(action)) return "RecordTriggerDelay";
  if (auto* a = std::get_if<RoundFinished>(&action)) {
    return "RoundFinished id=" + std::to_string(a->checkpoint_id) + " " +
           CheckpointStatusName(a->status) +
           (a->requeued ? " requeued" : "") + " (" + a->reason + ")";
  }
  if (auto* a = std::get_if<IgnoredMessage>(&action)) return std::string("Ignored ") + IgnoredReasonLabel(a->reason);
  if (auto* a = std::get_if<Log>(&action)) return "Log " + a->text;
  return "?";
}

// --------------------------------------------------------------------------------------------
// The driver: a coordinator, the runtime's timers, a fake store, and a model to check against.

const std::vector<std::string> kAllTasks = {"a", "b", "c", "d"};

class Driver {
 public:
  explicit Driver(Input& in) : in_(in) {}

  void Run() {
    Setup();
    for (int events = 0; !in_.empty() && events < 4000; ++events) {
      event_index_ = events;
      Event();
      if (auto_store_) DrainStore();
      CheckState();
    }
  }

 private:
  // ---- invariant failures -------------------------------------------------------------------

  [[noreturn]] void Violation(int line, const char* cond, const std::string& what) {
    std::fprintf(stderr,
                 "\ncoordinator_fuzzer: INVARIANT BROKEN (line %d): %s\n  check: %s\n"
                 "  event #%d, in %s; open round %lld, last trigger %lld, store commit %lld, "
                 "confirmed counter %lld, deleted %d\n"
                 "  (rerun the input with CKPT_FUZZ_VERBOSE=1 to see every event and action)\n",
                 line, what.c_str(), cond, event_index_, CallName(current_.call),
                 static_cast<long long>(open_round_.value_or(0)),
                 static_cast<long long>(last_trigger_id_),
                 static_cast<long long>(commit_outstanding_.value_or(0)),
                 static_cast<long long>(reserved_confirmed_), deleted_ ? 1 : 0);
    std::fflush(stderr);
    __builtin_trap();
  }
#define FUZZ_CHECK(cond, what)                      \
  do {                                              \
    if (!(cond)) Violation(__LINE__, #cond, (what)); \
  } while (0)

  // ---- setup ----------------------------------------------------------------------------------

  // Header, 4 bytes. h0: bit 0 restarted, bit 1 the store completes every write at once
  // (otherwise events do), bit 2 ticking clock, bits 3-4 stored StickyState, bits 5-7 stored
  // generation - 1. h1: bits 0-2 id block, bits 3-5 stored id counter, bits 6-7 age of the last
  // completed checkpoint. h2: the spec's policy (SpecFromByte). h3: bits 0-1 task count, bits
  // 2-3 start spread.
  // Then events: an opcode byte (mod 25, see Event()) and its argument bytes.
  void Setup() {
    const uint8_t h0 = in_.Byte(), h1 = in_.Byte(), h2 = in_.Byte(), h3 = in_.Byte();
    const bool restarted = h0 & 1;
    auto_store_ = h0 & 2;
    clock_.SetTicking(h0 & 4);
    tolerance_ = clock_.ticking() ? Millis(1) : Millis(0);

    static constexpr int64_t kBlocks[] = {100, 1, 2, 3, 4, 5, 10, 50};
    static constexpr int64_t kCounters[] = {0, 0, 1, 5, 99, 100, 150, 1000};
    static constexpr int64_t kAges[] = {-1, 0, 500, 50'000};
    CoordinatorOptions options;
    options.id_block = kBlocks[h1 & 7];
    options.missing_tasks_warn_interval = Millis(10'000);
    options.reserve_retry = Millis(1'000);
    options.savepoint_root = "/sp";
    static constexpr int64_t kSpreads[] = {0, 0, 50, 1000};
    options.start_spread = Millis(kSpreads[(h3 >> 2) & 3]);

    StoredPipeline stored;
    stored.id_counter = kCounters[(h1 >> 3) & 7];
    initial_counter_ = stored.id_counter;
    reserved_confirmed_ = stored.id_counter;
    static constexpr int kTaskCounts[] = {3, 1, 2, 3};
    PipelineSpec spec = SpecFromByte(h2, kTaskCounts[h3 & 3]);
    stored.record.spec = spec;
    stored.record.generation = 1 + (h0 >> 5);
    stored.record.sticky = static_cast<StickyState>((h0 >> 3) & 3);
    stored.record.counters.completed_count = stored.id_counter > 0 ? 3 : 0;
    if (stored.id_counter > 0) {
      stored.record.last_completed_id = std::max<int64_t>(1, stored.id_counter - 1);
      const int64_t age = kAges[(h1 >> 6) & 3];
      if (age >= 0) stored.record.last_completed_at_ms = clock_.WallMs() - age;
      if (restarted && age >= 0) {
        // Start() maps the last completion onto the steady clock: the schedule continues from it.
        last_trigger_at_ = clock_.Peek() - Millis(age);
        last_finished_at_ = last_trigger_at_;
      }
    }
    spec_ = spec;
    expected_completed_count_ = stored.record.counters.completed_count;
    last_completed_id_ = stored.record.last_completed_id;
    generation_ = stored.record.generation;
    persisted_generation_ = generation_;
    written_spec_ = spec;  // the stored record holds it

    coordinator_.emplace(stored, clock_, options);
    Apply({Call::kStart}, coordinator_->Start(restarted));
    CheckState();
  }

  static PipelineSpec SpecFromByte(uint8_t b, int task_count) {
    static constexpr int64_t kIntervals[] = {10, 100, 1000, 10'000};
    static constexpr int64_t kTimeouts[] = {1, 50, 500, 5'000};
    static constexpr int64_t kPauses[] = {0, 50, 1000, 20'000};
    static constexpr int32_t kTolerable[] = {0, 1, 2, 5};
    PipelineSpec spec;
    spec.key = {"job", "pipe"};
    spec.task_ids.assign(kAllTasks.begin(), kAllTasks.begin() + task_count);
    spec.interval_ms = kIntervals[b & 3];
    spec.timeout_ms = kTimeouts[(b >> 2) & 3];
    spec.min_pause_ms = kPauses[(b >> 4) & 3];
    spec.tolerable_failures = kTolerable[(b >> 6) & 3];
    spec.retained = 10;
    return spec;
  }

  // ---- events ---------------------------------------------------------------------------------

  void Event() {
    const uint8_t op = in_.Byte() % 26;
    // After Delete the runtime drops every worker message, timer and id reservation and answers
    // operator calls with NOT_FOUND (runtime/pipeline_runner.cc); only the completion of a commit
    // handed to the store before the delete still arrives. Time still passes.
    const bool after_delete = op == 0 || op == 13 || op == 14;
    if (deleted_ && !after_delete) return;
    switch (op) {
      case 0: {  // time passes (timers do not fire by themselves)
        const uint8_t b = in_.Byte();
        const int64_t ms = b < 200 ? b : (b - 199) * 500;
        Trace("advance " + std::to_string(ms) + " ms");
        clock_.Advance(Millis(ms));
        break;
      }
      case 1:  // the wakeup timer fires if it is due
        if (wakeup_ && *wakeup_ <= clock_.Peek()) FireWakeup();
        break;
      case 2:  // time runs to the next timer, which fires
        RunToNextTimer();
        break;
      case 3:  // a stale or spurious wakeup (Asio may run a handler whose expiry was replaced)
        Trace("spurious wakeup");
        Apply({Call::kWakeup}, coordinator_->OnWakeup());
        break;
      case 4:  // the timeout timer fires with the armed id, if due
        if (timeout_ && timeout_->at <= clock_.Peek()) FireTimeout();
        break;
      case 5: {  // a timeout fires with a stale id
        const int64_t id = PickStaleTimeoutId(in_.Byte());
        if (timeout_ && timeout_->checkpoint_id == id) break;  // not stale
        Trace("stale timeout " + std::to_string(id));
        Apply({Call::kTimeout, id}, coordinator_->OnTimeout(id));
        break;
      }
      case 6:
        Register(in_.Byte(), in_.Byte());
        break;
      case 7: {
        const SessionId session = PickSession(in_.Byte());
        Trace("session " + std::to_string(session) + " ended");
        Apply({Call::kSessionEnded}, coordinator_->OnSessionEnded(session, "fuzz"));
        ForgetSession(session);
        break;
      }
      case 8:
      case 9:
        AckOrDecline(op == 9, in_.Byte(), in_.Byte(), in_.Byte());
        break;
      case 10:  // every task acks the pending round from the stream that registered it
        AckAllOwned();
        break;
      case 11:
        if (reserve_outstanding_) CompleteReserve(true);
        break;
      case 12:
        if (reserve_outstanding_) CompleteReserve(false);
        break;
      case 13:
        if (commit_outstanding_) CompleteCommit(true);
        break;
      case 14:
        if (commit_outstanding_) CompleteCommit(false);
        break;
      case 15:
        WrongCommitReport(in_.Byte());
        break;
      case 16: {
        Trace("pause");
        auto o = coordinator_->Pause();
        Apply({Call::kPause}, o.actions);
        break;
      }
      case 17: {
        Trace("resume");
        auto o = coordinator_->Resume();
        Apply({Call::kResume}, o.actions);
        break;
      }
      case 18: {
        Trace("trigger now");
        int64_t id = 0;
        auto o = coordinator_->TriggerCheckpoint(&id);
        Apply({Call::kTriggerNow}, o.actions);
        if (o.status.ok()) {
          FUZZ_CHECK(open_round_ && *open_round_ == id,
                     "TriggerCheckpoint succeeded but the id it returned is not the open round");
        }
        break;
      }
      case 19:
        RequestSavepoint(in_.Byte());
        break;
      case 20:
        UpdateSpec(in_.Byte(), in_.Byte());
        break;
      case 21:
        Trace("delete");
        deleted_ = true;
        Apply({Call::kDelete}, coordinator_->Delete());
        owner_.clear();
        break;
      case 22:
        Trace("begin shutdown");
        shutting_down_ = true;
        Apply({Call::kShutdown}, coordinator_->BeginShutdown());
        break;
      case 23:
        Trace("persist failed");
        Apply({Call::kPersistFailed}, coordinator_->OnPersistFailed(in_.Byte() & 1));
        break;
      case 25: {  // the store starts or stops taking writes (StoreHealth)
        store_writable_ = (in_.Byte() & 1) != 0;
        Trace(std::string("store ") + (store_writable_ ? "writable" : "failing writes"));
        Apply({Call::kStoreWritable}, coordinator_->OnStoreWritable(store_writable_));
        break;
      }
      case 24: {  // a burst of time passing with every timer firing on time
        const int steps = 1 + in_.Byte() % 8;
        for (int i = 0; i < steps; ++i) {
          if (!RunToNextTimer()) break;
          if (auto_store_) DrainStore();
        }
        break;
      }
    }
  }

  void FireWakeup() {
    wakeup_.reset();
    Trace("wakeup fires");
    Apply({Call::kWakeup}, coordinator_->OnWakeup());
  }

  void FireTimeout() {
    const int64_t id = timeout_->checkpoint_id;
    timeout_.reset();
    Trace("timeout fires for " + std::to_string(id));
    Apply({Call::kTimeout, id}, coordinator_->OnTimeout(id));
  }

  // Advances to the earlier timer and fires it; false when none is armed.
  bool RunToNextTimer() {
    if (!wakeup_ && !timeout_) return false;
    const bool timeout_first = timeout_ && (!wakeup_ || timeout_->at < *wakeup_);
    clock_.AdvanceTo(timeout_first ? timeout_->at : *wakeup_);
    if (timeout_first) {
      FireTimeout();
    } else {
      FireWakeup();
    }
    return true;
  }

  int64_t PickStaleTimeoutId(uint8_t b) {
    if (!timeout_ids_.empty() && (b & 1)) return timeout_ids_[(b >> 1) % timeout_ids_.size()];
    return std::max<int64_t>(0, last_trigger_id_ + static_cast<int>(b >> 1) % 5 - 2);
  }

  // A session id that exists or existed (or a never-seen one), chosen by `b`.
  SessionId PickSession(uint8_t b) {
    if (sessions_.empty() || b >= 250) return 1000 + b;
    return sessions_[sessions_.size() - 1 - b % std::min<size_t>(sessions_.size(), 8)];
  }

  void Register(uint8_t flags, uint8_t mask) {
    std::vector<std::string> tasks;
    for (int i = 0; i < 4; ++i) {
      if (mask & (1 << i)) tasks.push_back(kAllTasks[i]);
    }
    if (mask & 0x10) tasks.push_back("x");                         // not a task of the pipeline
    if ((mask & 0x20) && !tasks.empty()) tasks.push_back(tasks[0]);  // named twice
    if (mask & 0x40) tasks.push_back("");                          // invalid id
    const bool takeover = flags & 1;
    const std::string worker = (flags & 4) ? "" : "w" + std::to_string((flags >> 3) % 4);
    SessionId session;
    if ((flags & 2) && !sessions_.empty()) {
      session = PickSession(flags >> 4);  // a second hello on a stream (or a dead one)
    } else {
      session = next_session_++;
      sessions_.push_back(session);
    }
    Trace("register session " + std::to_string(session) + " tasks " + std::to_string(mask) +
          (takeover ? " takeover" : ""));
    auto reg = coordinator_->OnRegister(session, worker, tasks, takeover);
    if (reg.status.ok()) {
      for (const auto& t : tasks) owner_[t] = session;
    }
    Apply({Call::kRegister}, reg.actions);
    if (reg.status.ok()) {
      FUZZ_CHECK(reg.welcome.generation == coordinator_->Describe().generation,
                 "welcome carries a generation other than the pipeline's");
      FUZZ_CHECK(reg.welcome.generation >= generation_, "welcome generation went back");
    }
  }

  void ForgetSession(SessionId session) {
    for (auto it = owner_.begin(); it != owner_.end();) {
      it = it->second == session ? owner_.erase(it) : std::next(it);
    }
  }

  int64_t PickCheckpointId(uint8_t b) {
    const int64_t base = open_round_.value_or(last_trigger_id_);
    switch (b & 3) {
      case 0: return base;
      case 1: return base - 1 - (b >> 2) % 3;
      case 2: return base + 1 + (b >> 2) % 3;
      default: return (b >> 2) % 2 ? last_trigger_id_ : static_cast<int64_t>(b >> 2);
    }
  }

  void AckOrDecline(bool decline, uint8_t session_byte, uint8_t id_byte, uint8_t task_byte) {
    const std::string task = task_byte % 5 < 4 ? kAllTasks[task_byte % 5] : "x";
    SessionId session;
    if (session_byte & 0x80) {
      auto it = owner_.find(task);
      session = it != owner_.end() ? it->second : PickSession(session_byte & 0x7f);
    } else {
      session = PickSession(session_byte);
    }
    const int64_t id = PickCheckpointId(id_byte);
    if (decline) {
      Trace("decline " + std::to_string(id) + " task " + task + " session " +
            std::to_string(session));
      Apply({Call::kDecline},
            coordinator_->OnDecline(session, id, task, "fuzz", (task_byte & 0x80) != 0));
    } else {
      Trace("ack " + std::to_string(id) + " task " + task + " session " + std::to_string(session));
      Apply({Call::kAck}, coordinator_->OnAck(session, id, task, TaskState{"mem://" + task, 1, "c"}));
    }
  }

  void AckAllOwned() {
    const int64_t id = open_round_.value_or(last_trigger_id_);
    for (const auto& task : spec_.task_ids) {
      auto it = owner_.find(task);
      if (it == owner_.end()) continue;
      Trace("ack " + std::to_string(id) + " task " + task + " (owner)");
      Apply({Call::kAck}, coordinator_->OnAck(it->second, id, task, TaskState{"mem://" + task, 1, "c"}));
    }
  }

  void RequestSavepoint(uint8_t b) {
    static const std::string kTargets[] = {"", "s3://a", "s3://b", ""};
    static constexpr int64_t kTimeouts[] = {1, 50, 1000, 60'000};
    const std::string& target = kTargets[b & 3];
    const bool stop = b & 4;
    const Millis timeout(kTimeouts[(b >> 3) & 3]);
    Trace("savepoint target '" + target + "'" + (stop ? " stop" : ""));
    auto o = coordinator_->RequestSavepoint(target, stop, timeout);
    Apply({Call::kSavepoint}, o.actions);
  }

  void UpdateSpec(uint8_t mask, uint8_t policy) {
    PipelineSpec spec = SpecFromByte(policy, 0);
    for (int i = 0; i < 4; ++i) {
      if (mask & (1 << i)) spec.task_ids.push_back(kAllTasks[i]);
    }
    if (mask & 0x10) std::reverse(spec.task_ids.begin(), spec.task_ids.end());  // same set
    if (mask & 0x20) spec.key.pipeline_id = "other";  // the coordinator must refuse it
    if (!ValidateSpec(spec).ok()) return;             // the admin API validates first
    Trace("update spec tasks " + std::to_string(mask & 15));
    auto o = coordinator_->UpdateSpec(spec);
    if (o.status.ok()) {
      FUZZ_CHECK(spec.key == spec_.key, "UpdateSpec accepted a different key");
      spec_ = spec;
    }
    Apply({Call::kUpdateSpec}, o.actions);
  }

  // ---- the store ------------------------------------------------------------------------------

  void CompleteReserve(bool ok) {
    const int64_t counter = *reserve_outstanding_;
    reserve_outstanding_.reset();
    if (ok) {
      reserved_confirmed_ = std::max(reserved_confirmed_, counter);
      Trace("store: ids reserved up to " + std::to_string(counter));
      Apply({Call::kIdsReserved}, coordinator_->OnIdsReserved(counter));
    } else {
      Trace("store: id reservation failed");
      Apply({Call::kIdsReserveFailed},
            coordinator_->OnIdsReserveFailed(Status::Internal("fuzz: disk full")));
    }
  }

  void CompleteCommit(bool ok) {
    const int64_t id = *commit_outstanding_;
    commit_outstanding_.reset();
    if (ok) {
      Trace("store: checkpoint " + std::to_string(id) + " durable");
      Apply({Call::kCommitted, id, true}, coordinator_->OnCommitted(id));
    } else {
      Trace("store: checkpoint " + std::to_string(id) + " failed");
      store_failed_id_ = id;
      Apply({Call::kCommitFailed, id}, coordinator_->OnCommitFailed(id, Status::Internal("fuzz")));
    }
  }

  // The store reports an id it was not handed (or no longer holds): must change nothing.
  void WrongCommitReport(uint8_t b) {
    int64_t id = PickCheckpointId(b >> 1);
    if (commit_outstanding_ && id == *commit_outstanding_) id += 1 + (b >> 7);
    if (b & 1) {
      Trace("store: wrong id " + std::to_string(id) + " reported durable");
      Apply({Call::kCommitted, id, false}, coordinator_->OnCommitted(id));
    } else {
      Trace("store: wrong id " + std::to_string(id) + " reported failed");
      Apply({Call::kCommitFailed, id}, coordinator_->OnCommitFailed(id, Status::Internal("fuzz")));
    }
  }

  // The store completes everything it holds, successfully (the runtime posts each completion
  // back to the strand after the current handler).
  void DrainStore() {
    if (deleted_) {  // only a commit's completion still arrives (see Event)
      if (commit_outstanding_) CompleteCommit(true);
      return;
    }
    for (int i = 0; reserve_outstanding_ || commit_outstanding_; ++i) {
      FUZZ_CHECK(i < 1000, "store writes never settle: reservation/commit ping-pong");
      if (reserve_outstanding_) {
        CompleteReserve(true);
      } else {
        CompleteCommit(true);
      }
    }
  }

  // ---- actions and invariants -----------------------------------------------------------------

  void Trace(const std::string& what) {
    if (g_verbose) std::fprintf(stderr, "#%d %s\n", event_index_, what.c_str());
  }

  void Apply(CallInfo info, const Actions& actions) {
    current_ = info;
    const PipelineStatus status = coordinator_->Describe();
    const SteadyTime now = clock_.Peek();
    for (const Action& action : actions) {
      if (g_verbose) std::fprintf(stderr, "    -> %s\n", Describe(action).c_str());
      if (auto* a = std::get_if<SendTrigger>(&action)) {
        OnTrigger(*a, status, now);
      } else if (auto* a = std::get_if<ArmTimeout>(&action)) {
        FUZZ_CHECK(open_round_ && *open_round_ == a->checkpoint_id,
                   "ArmTimeout for a round that is not the open one");
        FUZZ_CHECK(a->at + tolerance_ > now, "ArmTimeout at or before now");
        timeout_ = *a;
        timeout_ids_.push_back(a->checkpoint_id);
        if (timeout_ids_.size() > 8) timeout_ids_.erase(timeout_ids_.begin());
      } else if (std::holds_alternative<CancelTimeout>(action)) {
        timeout_.reset();
      } else if (auto* a = std::get_if<ArmWakeup>(&action)) {
        FUZZ_CHECK(!deleted_ && !shutting_down_, "wakeup armed after Delete/BeginShutdown");
        wakeup_ = a->at;
      } else if (std::holds_alternative<CancelWakeup>(action)) {
        wakeup_.reset();
      } else if (auto* a = std::get_if<ReserveIds>(&action)) {
        FUZZ_CHECK(!reserve_outstanding_, "a second id reservation while one is in flight");
        FUZZ_CHECK(a->new_counter > reserved_confirmed_,
                   "ReserveIds does not move the counter forward");
        reserve_outstanding_ = a->new_counter;
      } else if (auto* a = std::get_if<CommitCheckpoint>(&action)) {
        OnCommit(*a);
      } else if (auto* a = std::get_if<SendComplete>(&action)) {
        OnComplete(*a);
      } else if (auto* a = std::get_if<SendAbort>(&action)) {
        FUZZ_CHECK(open_round_ && *open_round_ == a->checkpoint_id,
                   "SendAbort for a round that is not the open one");
        FUZZ_CHECK(!commit_outstanding_ || *commit_outstanding_ != a->checkpoint_id,
                   "a round handed to the store was aborted");
        FUZZ_CHECK(!complete_sent_, "a completed round was aborted");
      } else if (auto* a = std::get_if<RoundFinished>(&action)) {
        OnRoundFinished(*a, now);
      } else if (auto* a = std::get_if<PersistRecord>(&action)) {
        FUZZ_CHECK(!deleted_, "a record persisted after Delete (it would bring the pipeline back)");
        FUZZ_CHECK(a->record.generation >= persisted_generation_,
                   "a persisted record has an older generation than one persisted before");
        persisted_generation_ = a->record.generation;
        FUZZ_CHECK(a->record.spec == spec_, "a persisted record has another spec");
        written_spec_ = a->record.spec;
      } else if (auto* a = std::get_if<PersistProgress>(&action)) {
        FUZZ_CHECK(!deleted_, "progress persisted after Delete");
        FUZZ_CHECK(a->key == spec_.key, "progress persisted under another key");
        FUZZ_CHECK(a->progress.generation >= persisted_generation_,
                   "persisted progress has an older generation than one persisted before");
        persisted_generation_ = a->progress.generation;
      } else if (auto* a = std::get_if<EndSession>(&action)) {
        ForgetSession(a->session);
      }
    }
    FUZZ_CHECK(status.generation >= generation_, "generation decreased");
    generation_ = status.generation;
    if (counted_failure_) {
      counted_failure_ = false;
      FUZZ_CHECK(status.counters.consecutive_failures > 0,
                 "a counted failure left consecutive_failures at 0");
      if (status.counters.consecutive_failures > status.spec.tolerable_failures) {
        FUZZ_CHECK(status.state == PipelineState::kFailed,
                   "more than tolerable_failures consecutive failures, yet not FAILED");
      }
    }
  }

  void OnTrigger(const SendTrigger& t, const PipelineStatus& status, SteadyTime now) {
    FUZZ_CHECK(store_writable_, "a round started while the store fails writes");
    FUZZ_CHECK(!deleted_, "trigger after Delete");
    FUZZ_CHECK(!shutting_down_, "trigger after BeginShutdown");
    FUZZ_CHECK(!open_round_, "a trigger while another round is pending");
    FUZZ_CHECK(t.checkpoint_id > last_trigger_id_, "trigger ids do not strictly increase");
    FUZZ_CHECK(t.checkpoint_id > initial_counter_,
               "trigger id at or below the stored counter (may reuse an id from before a restart)");
    FUZZ_CHECK(t.checkpoint_id <= reserved_confirmed_,
               "trigger id above the highest counter the store confirmed durable");
    FUZZ_CHECK(status.state == PipelineState::kRunning, "trigger while the pipeline is not RUNNING");
    FUZZ_CHECK(status.missing_tasks.empty() &&
                   status.registered_tasks == static_cast<int>(status.spec.task_ids.size()),
               "trigger while tasks are missing");
    FUZZ_CHECK(t.generation == status.generation, "trigger tagged with a stale generation");
    const std::vector<SessionId> sessions = coordinator_->Sessions();
    FUZZ_CHECK(std::set<SessionId>(t.to.begin(), t.to.end()) ==
                   std::set<SessionId>(sessions.begin(), sessions.end()) && !t.to.empty(),
               "trigger not sent to exactly the live sessions");
    if (t.kind == CheckpointKind::kCheckpoint) {
      FUZZ_CHECK(t.target.empty(), "a checkpoint trigger with a target");
    } else {
      FUZZ_CHECK(!t.target.empty(), "a savepoint trigger without a location");
    }
    const bool periodic = t.kind == CheckpointKind::kCheckpoint && current_.call != Call::kTriggerNow;
    if (periodic) {
      const auto savepoint = coordinator_->CurrentSavepoint();
      FUZZ_CHECK(!savepoint || savepoint->checkpoint_id != 0,
                 "a periodic checkpoint triggered ahead of a queued savepoint");
      if (last_trigger_at_) {
        FUZZ_CHECK(now + tolerance_ >= *last_trigger_at_ + Millis(spec_.interval_ms),
                   "periodic trigger sooner than interval_ms after the previous trigger");
      }
      if (last_finished_at_) {
        FUZZ_CHECK(now + tolerance_ >= *last_finished_at_ + Millis(spec_.min_pause_ms),
                   "periodic trigger sooner than min_pause_ms after the previous round finished");
      }
    }
    open_round_ = t.checkpoint_id;
    open_kind_ = t.kind;
    complete_sent_ = false;
    last_trigger_id_ = t.checkpoint_id;
    last_trigger_at_ = now;
  }

  void OnCommit(const CommitCheckpoint& action) {
    const CheckpointCommit& c = action.commit;
    const int64_t id = c.checkpoint.checkpoint_id;
    FUZZ_CHECK(open_round_ && *open_round_ == id, "CommitCheckpoint for a round that is not open");
    FUZZ_CHECK(!commit_outstanding_, "a second commit while the store holds one");
    FUZZ_CHECK(!handed_.count(id), "the same checkpoint handed to the store twice");
    std::set<std::string> acked;
    for (const auto& [task, state] : c.checkpoint.task_states) acked.insert(task);
    FUZZ_CHECK(acked == std::set<std::string>(spec_.task_ids.begin(), spec_.task_ids.end()),
               "a committed checkpoint lacks an ack of some expected task");
    FUZZ_CHECK(c.key == spec_.key, "a commit under another key");
    FUZZ_CHECK(c.retained == spec_.retained, "a commit trims to another retention than the spec's");
    FUZZ_CHECK(c.progress_after.last_completed_id == id,
               "the progress written with a commit does not name it as last completed");
    FUZZ_CHECK(c.progress_after.generation >= persisted_generation_,
               "the progress written with a commit has an older generation");
    persisted_generation_ = c.progress_after.generation;
    handed_.insert(id);
    commit_outstanding_ = id;
  }

  void OnComplete(const SendComplete& s) {
    const int64_t id = s.checkpoint_id;
    FUZZ_CHECK(current_.call == Call::kCommitted && current_.store_reported && current_.id == id,
               "SendComplete other than for the id the store just reported durable");
    FUZZ_CHECK(handed_.count(id), "SendComplete for an id never handed to the store");
    FUZZ_CHECK(!completed_.count(id), "SendComplete twice for one id");
    FUZZ_CHECK(open_round_ && *open_round_ == id && !complete_sent_,
               "SendComplete for a round that is not the open one");
    completed_.insert(id);
    complete_sent_ = true;
    ++expected_completed_count_;
    last_completed_id_ = id;
  }

  void OnRoundFinished(const RoundFinished& r, SteadyTime now) {
    if (r.checkpoint_id == 0) return;  // a queued savepoint that never started
    FUZZ_CHECK(open_round_ && *open_round_ == r.checkpoint_id,
               "RoundFinished for a round that is not the open one");
    if (r.status == CheckpointStatus::kCompleted) {
      // After Delete nobody is told: the round only finishes for its savepoint caller and metrics.
      FUZZ_CHECK(complete_sent_ || deleted_, "a round finished COMPLETED without SendComplete");
    } else {
      FUZZ_CHECK(!complete_sent_, "a round sent complete then finished as failed");
      FUZZ_CHECK(!commit_outstanding_ || *commit_outstanding_ != r.checkpoint_id,
                 "a round handed to the store finished as failed before the store answered");
    }
    open_round_.reset();
    complete_sent_ = false;
    last_finished_at_ = now;
    // Declines and expiries of checkpoints count toward tolerable_failures; store failures and
    // aborts do not.
    if ((r.status == CheckpointStatus::kFailed || r.status == CheckpointStatus::kExpired) &&
        r.kind == CheckpointKind::kCheckpoint && r.checkpoint_id != store_failed_id_) {
      counted_failure_ = true;
    }
  }

  // After every event: the coordinator's view agrees with what its actions said.
  void CheckState() {
    const PipelineStatus status = coordinator_->Describe();
    // A spec change is written whole in the step that made it (progress writes carry no spec).
    FUZZ_CHECK(deleted_ || written_spec_ == spec_, "a changed spec was not written");
    FUZZ_CHECK(status.generation >= generation_, "generation decreased");
    generation_ = status.generation;
    FUZZ_CHECK(coordinator_->HasPendingRound() == open_round_.has_value(),
               "HasPendingRound disagrees with the triggers and finishes seen");
    FUZZ_CHECK(status.pending_checkpoint_id == open_round_.value_or(0),
               "pending_checkpoint_id is not the open round");
    if (auto pending = coordinator_->Pending()) {
      const bool with_store = commit_outstanding_ && *commit_outstanding_ == pending->checkpoint_id;
      FUZZ_CHECK(pending->completing == with_store,
                 "the round is 'completing' exactly while the store holds its commit");
      if (!pending->completing && !deleted_) {
        FUZZ_CHECK(timeout_ && timeout_->checkpoint_id == pending->checkpoint_id,
                   "a pending round without its timeout armed (it could hang forever)");
      }
    }
    if (open_round_ && open_kind_ != CheckpointKind::kCheckpoint) {
      auto view = coordinator_->CurrentSavepoint();
      FUZZ_CHECK(view && view->checkpoint_id == *open_round_,
                 "CurrentSavepoint does not show the pending savepoint");
    }
    FUZZ_CHECK(status.counters.completed_count == expected_completed_count_,
               "completed_count does not match the completes sent");
    FUZZ_CHECK(status.last_completed_checkpoint_id == last_completed_id_,
               "last_completed_checkpoint_id is not the last id completed");
    FUZZ_CHECK(status.registered_tasks == static_cast<int>(owner_.size()),
               "registered task count disagrees with the registrations and losses seen");
    if (deleted_) {
      FUZZ_CHECK(status.sessions == 0, "sessions left after Delete");
      FUZZ_CHECK(!open_round_ || commit_outstanding_ == open_round_,
                 "a round survived Delete without being with the store");
    }
    // The schedule never silently stops: an idle running pipeline has a wakeup armed or waits for
    // the store to reserve ids.
    // (While the store fails writes no round may start: the schedule waits for it to recover.)
    if (!deleted_ && !shutting_down_ && store_writable_ && status.state == PipelineState::kRunning &&
        !open_round_) {
      FUZZ_CHECK(wakeup_ || reserve_outstanding_,
                 "RUNNING, idle, and nothing armed: the schedule stopped");
    }
    // A queued savepoint fails once the pipeline is PAUSED, FAILED, STOPPED or deleted, and starts
    // as soon as it can: when the pipeline is RUNNING and idle, its wakeup is due now (or the
    // trigger waits for an id reservation).
    const auto savepoint = coordinator_->CurrentSavepoint();
    const bool queued = savepoint && savepoint->checkpoint_id == 0;
    if (queued) {
      FUZZ_CHECK(!deleted_, "a savepoint still queued after Delete");
      FUZZ_CHECK(status.state != PipelineState::kPaused && status.state != PipelineState::kFailed &&
                     status.state != PipelineState::kStopped,
                 "a savepoint still queued while PAUSED, FAILED or STOPPED");
      if (!shutting_down_ && store_writable_ && status.state == PipelineState::kRunning &&
          !open_round_) {
        const bool ids_left = std::max(last_trigger_id_, initial_counter_) < reserved_confirmed_;
        FUZZ_CHECK(ids_left ? wakeup_ && *wakeup_ <= clock_.Peek() : wakeup_ || reserve_outstanding_,
                   "a queued savepoint could start, but nothing starts it now");
      }
    }
  }

  Input& in_;
  FuzzClock clock_;
  std::optional<PipelineCoordinator> coordinator_;
  bool auto_store_ = false;
  Millis tolerance_{0};
  int event_index_ = -1;
  CallInfo current_{Call::kStart};

  // Runtime: timers.
  std::optional<SteadyTime> wakeup_;
  std::optional<ArmTimeout> timeout_;
  std::vector<int64_t> timeout_ids_;  // recent armed ids, for stale fires

  // Store.
  std::optional<int64_t> reserve_outstanding_;
  std::optional<int64_t> commit_outstanding_;
  int64_t initial_counter_ = 0;
  int64_t reserved_confirmed_ = 0;
  std::set<int64_t> handed_;
  std::set<int64_t> completed_;

  // Model.
  PipelineSpec spec_;
  std::optional<int64_t> open_round_;
  CheckpointKind open_kind_ = CheckpointKind::kCheckpoint;
  bool complete_sent_ = false;
  bool counted_failure_ = false;  // a counted failure finished in the call being applied
  int64_t store_failed_id_ = 0;   // the last round whose commit the store failed
  bool store_writable_ = true;    // as last told (OnStoreWritable)
  int64_t last_trigger_id_ = 0;
  std::optional<SteadyTime> last_trigger_at_;
  std::optional<SteadyTime> last_finished_at_;
  int64_t generation_ = 1;
  int64_t persisted_generation_ = 1;
  PipelineSpec written_spec_;  // the spec of the last whole-record write
  int64_t expected_completed_count_ = 0;
  int64_t last_completed_id_ = 0;
  bool deleted_ = false;
  bool shutting_down_ = false;
  SessionId next_session_ = 1;
  std::vector<SessionId> sessions_;          // every session id handed out, oldest first
  std::map<std::string, SessionId> owner_;  // task -> the stream that registered it
};

}  // namespace
}  // namespace ckpt

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* v = std::getenv("CKPT_FUZZ_VERBOSE");
  ckpt::g_verbose = v && *v && *v != '0';
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ckpt::Input in(data, size);
  ckpt::Driver driver(in);
  driver.Run();
  return 0;
}
