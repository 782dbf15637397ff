// libFuzzer target: GroupCoordinator's event handling (docs/ALIGNMENT.md). The input is decoded
// as a short header (the group's policy, its stored progress, its first members and how the store
// behaves) and a sequence of events: time passing, the group's two timers firing (due, stale ids,
// spurious), members joining, leaving, reporting readiness and positions, reporting done or failed
// for the pending, stale and future ids, the store completing or failing id reservations and group
// commits (or reporting an id it was not handed), operators asking for rounds and savepoints,
// policy changes, and a daemon restart that rebuilds the coordinator from what the store holds.
//
// The driver carries the actions out the way runtime/group_runner.cc does: one wakeup timer and
// one deadline timer, each re-armed by the next Arm action (a replaced or cancelled timer's
// handler may still run: the spurious and stale events), store writes outstanding until an event
// (or, in auto mode, the end of each event) completes them. A model of the group checks after
// every coordinator call that:
//   - at most one group round is in flight; a round starts only when none is, for exactly the
//     current members, every one of them ready; every started round ends (completed, failed,
//     expired or aborted: one GroupRoundFinished) before the next starts;
//   - ids strictly increase, also across restarts; each is above the stored counter and last round
//     the group started from, above every member's id counter, and within the block the store
//     confirmed durable; at most one id reservation is with the store at a time;
//   - CommitGroupRound only for the round in flight, once, after every member of it reported done
//     for its id, holding exactly their parts; never for a round that ended;
//   - a round with the store ends only through the store's answer for its id (OnCommitted ->
//     MemberRoundDurable to exactly its members, OnCommitFailed -> STORE_FAILED to all); nothing
//     else (a failure, a deadline, a member leaving) ends or changes it;
//   - how a round ends for each member: a decline or passed position FAILED for that member, a
//     member's expiry EXPIRED for it, the deadline EXPIRED for the members not done, a lost task,
//     an abort or a member leaving ABORTED for all, the others ABORTED; every member of the round
//     hears the end once, also one that left;
//   - a stale or foreign report (done or failed for another id, from a member not waited for, a
//     deadline of another round, a store answer for an id it was not handed) has no action;
//   - a round in flight and not with the store has its deadline armed for its id, at its trigger
//     time plus timeout_ms;
//   - periodic rounds respect interval_ms and min_pause_ms and the position gate; every round's
//     position is 0 without position_interval, else a multiple of it above the last completed
//     round's and every member's reported maximum;
//   - the schedule never stops: an idle group whose members are all ready (and whose position gate
//     is open) has a wakeup armed in time or an id reservation with the store; a queued savepoint
//     starts as soon as the group can start a round, is dropped only at its timeout, and has a
//     wakeup armed by then (or at most a second later: a failed reservation's retry replaces it);
//   - a member joining starts nothing (it joins not ready); a refused RequestRound has no
//     actions; one that starts a round names its id;
//   - Explain, Members, HasPendingRound, PendingRoundId, progress and CommittingWith agree with the
//     model.
// A broken rule prints what broke and traps (not assert: it does not depend on NDEBUG).
//
// One file, one concept: the decoder, the runtime stand-in and the model each see every action
// as the other two produce or carry it out, in one loop; apart, each would need the others'
// state. The pipeline coordinator's fuzzer keeps its model apart (tests/support/
// coordinator_invariants.h) because the unit tests share it; no unit test drives a group's model.
//
// CKPT_FUZZ_VERBOSE=1 prints every event and action (to replay a reproducer by hand).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/group_coordinator.h"
#include "core/spec_validation.h"
#include "fuzz_input.h"

namespace ckpt {
namespace {

bool g_verbose = false;

// The messages of checks and traces are built only when they are needed (a passing check costs a
// comparison: the fuzzer runs millions of them).
#define GROUP_FUZZ_CHECK(ok, message) \
  do {                                \
    if (!(ok)) Fail(message);         \
  } while (0)
#define GROUP_FUZZ_TRACE(what)  \
  do {                          \
    if (g_verbose) Print(what); \
  } while (0)

using GroupInput = fuzz::FuzzInput;
using GroupFuzzClock = fuzz::FuzzClock;

// --------------------------------------------------------------------------------------------
// Descriptions for CKPT_FUZZ_VERBOSE and failure messages

const char* OutcomeName(MemberOutcome o) {
  switch (o) {
    case MemberOutcome::kAborted: return "ABORTED";
    case MemberOutcome::kFailed: return "FAILED";
    case MemberOutcome::kExpired: return "EXPIRED";
    case MemberOutcome::kStoreFailed: return "STORE_FAILED";
  }
  return "?";
}

const char* ResultName(GroupRoundResult r) {
  switch (r) {
    case GroupRoundResult::kCompleted: return "completed";
    case GroupRoundResult::kAborted: return "aborted";
    case GroupRoundResult::kFailed: return "failed";
    case GroupRoundResult::kExpired: return "expired";
  }
  return "?";
}

int64_t MsOf(SteadyTime t) {
  return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
}

std::string Describe(const GroupAction& action) {
  struct V {
    std::string operator()(const StartMemberRound& a) const {
      return "StartMemberRound " + a.member.ToString() + " id " + std::to_string(a.checkpoint_id) +
             " " + CheckpointKindName(a.kind) + " position " + std::to_string(a.position);
    }
    std::string operator()(const MemberRoundDurable& a) const {
      return "MemberRoundDurable " + a.member.ToString() + " id " + std::to_string(a.checkpoint_id);
    }
    std::string operator()(const AbortMemberRound& a) const {
      return std::string("AbortMemberRound ") + a.member.ToString() + " id " +
             std::to_string(a.checkpoint_id) + " " + OutcomeName(a.outcome) + ": " + a.reason;
    }
    std::string operator()(const ArmGroupWakeup& a) const {
      return "ArmGroupWakeup at " + std::to_string(MsOf(a.at)) + " ms";
    }
    std::string operator()(const ArmGroupDeadline& a) const {
      return "ArmGroupDeadline at " + std::to_string(MsOf(a.at)) + " ms id " +
             std::to_string(a.checkpoint_id);
    }
    std::string operator()(const CancelGroupDeadline&) const { return "CancelGroupDeadline"; }
    std::string operator()(const ReserveGroupIds& a) const {
      return "ReserveGroupIds up to " + std::to_string(a.new_counter);
    }
    std::string operator()(const CommitGroupRound& a) const {
      return "CommitGroupRound id " + std::to_string(a.checkpoint_id) + " with " +
             std::to_string(a.members.size()) + " member(s), counter floor " +
             std::to_string(a.progress_after.id_counter);
    }
    std::string operator()(const GroupRoundStarted& a) const {
      return "GroupRoundStarted id " + std::to_string(a.checkpoint_id) + " " +
             CheckpointKindName(a.kind) + " position " + std::to_string(a.position);
    }
    std::string operator()(const GroupSavepointDropped& a) const {
      return "GroupSavepointDropped: " + a.reason;
    }
    std::string operator()(const GroupRoundFinished& a) const {
      return "GroupRoundFinished id " + std::to_string(a.checkpoint_id) + " " +
             ResultName(a.result) + (a.reason.empty() ? "" : ": " + a.reason);
    }
    std::string operator()(const MarkMemberCommitted& a) const {
      return "MarkMemberCommitted " + a.member.ToString() + " id " +
             std::to_string(a.checkpoint_id);
    }
    std::string operator()(const AskAdmission& a) const {
      return std::string("AskAdmission ") +
             (a.request.line == AdmissionClass::kSavepoint ? "savepoint" : "periodic") +
             " rounds " + std::to_string(a.request.rounds);
    }
    std::string operator()(const LeaveAdmission&) const { return "LeaveAdmission"; }
    std::string operator()(const GroupIntervalChanged& a) const {
      return "GroupIntervalChanged " + std::to_string(a.ms) + " ms (" + a.reason + ")";
    }
    std::string operator()(const Log& a) const { return "Log: " + a.text; }
  };
  return std::visit(V{}, action);
}

// --------------------------------------------------------------------------------------------
// The driver: events from the input played against the coordinator; it plays the runtime (the
// timers), the store and the members, and holds the model the coordinator is checked against.

constexpr int kMemberPool = 8;

const PipelineKey& MemberKey(int i) {
  static const std::vector<PipelineKey> keys = [] {
    std::vector<PipelineKey> k;
    for (int j = 0; j < kMemberPool; ++j) k.push_back(PipelineKey{"job", "m" + std::to_string(j)});
    return k;
  }();
  return keys[i];
}

// How a round is expected to end, set by the call that may end it.
enum class Expect { kNothing, kEnd, kNoActions };

class GroupDriver {
 public:
  explicit GroupDriver(GroupInput& in) : in_(in) {}

  void Run() {
    Setup();
    for (int events = 0; !in_.empty() && events < 1500; ++events) {
      event_index_ = events;
      Event();
      if (auto_store_) DrainStore();
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& message) {
    std::fprintf(stderr,
                 "\ngroup_coordinator_fuzzer: %s\n  event #%d, call %s\n"
                 "  (rerun the input with CKPT_FUZZ_VERBOSE=1 to see every event and action)\n",
                 message.c_str(), event_index_, call_);
    std::fflush(stderr);
    __builtin_trap();
  }

  void Print(const std::string& what) const {
    std::fprintf(stderr, "#%d %s\n", event_index_, what.c_str());
  }

  // ---- the model ------------------------------------------------------------------------------

  struct ModelMember {
    int64_t id_floor = 0;
    bool ready = false;
    std::optional<MemberPositions> positions;
  };
  struct ModelRound {
    int64_t id = 0;
    CheckpointKind kind = CheckpointKind::kCheckpoint;
    int64_t position = 0;
    std::set<PipelineKey> members;  // fixed at the start
    std::set<PipelineKey> waiting;  // not done yet
    bool committing = false;
    bool started_seen = false;  // GroupRoundStarted came
    bool deadline_seen = false;
    SteadyTime triggered_at{};
  };
  struct Deadline {
    SteadyTime at;
    int64_t id = 0;
  };
  struct Queued {
    CheckpointKind kind = CheckpointKind::kSavepoint;
    SteadyTime deadline;
  };
  // The store's durable view of the group and of each member's own id counter.
  struct Store {
    GroupProgress progress;
    std::map<PipelineKey, int64_t> member_counters;
  };

  // ---- setup ----------------------------------------------------------------------------------

  // Header, 4 bytes. h0: bits 0-2 member count (1..6), bit 3 the store completes every write at
  // once (otherwise events do), bit 4 ticking clock, bits 5-7 the id block. h1: the policy
  // (SpecFromByte; the position_interval is h3's). h2: bits 0-2 stored id counter, bits 3-5 stored
  // last round id, bits 6-7 age of the last completed round. h3: bits 0-1 position_interval, bits
  // 2-4 the members' own id counters, bit 5 every member reports ready at once, bit 6 the members
  // join before Start. h1's bits 6-7 (the position_interval being h3's) pick commit_timeout_ms.
  // Derived: admission caps on when bit 0 of h0 ^ h1 ^ h2 ^ h3 is set (the fuzzer answers: op 28).
  // Then events: an opcode byte (mod 29, see Event()) and its argument bytes.
  void Setup() {
    const uint8_t h0 = in_.Byte(), h1 = in_.Byte(), h2 = in_.Byte(), h3 = in_.Byte();
    const int member_count = 1 + (h0 & 7) % 6;
    auto_store_ = h0 & 8;
    clock_.SetTicking(h0 & 16);
    static constexpr int64_t kBlocks[] = {100, 1, 2, 3, 4, 10, 50, 100};
    options_.id_block = kBlocks[(h0 >> 5) & 7];
    if ((h0 ^ h1 ^ h2 ^ h3) & 1) {
      // A cap, so that every periodic round asks; the fuzzer itself answers (op 28).
      options_.admission = std::make_shared<RoundAdmission>(AdmissionCaps{1, 0});
    }

    spec_ = SpecFromByte(h1);
    spec_.position_interval = PositionIntervalFrom(h3 & 3);
    // h1's top bits, which SpecFromByte gives the position_interval h3 replaces: the commit phase.
    static constexpr int64_t kCommitTimeouts[] = {0, 0, 50, 5'000};
    spec_.commit_timeout_ms = kCommitTimeouts[(h1 >> 6) & 3];
    static constexpr int64_t kCounters[] = {0, 0, 1, 5, 99, 100, 150, 1000};
    static constexpr int64_t kAges[] = {-1, 0, 500, 50'000};
    store_.progress.id_counter = kCounters[h2 & 7];
    store_.progress.last_round_id = kCounters[(h2 >> 3) & 7];
    if (store_.progress.last_round_id > 0) {
      const int64_t age = kAges[(h2 >> 6) & 3];
      if (age >= 0) store_.progress.last_completed_at_ms = clock_.WallMs() - age;
      store_.progress.last_position = spec_.position_interval * 3;
    }
    static constexpr int64_t kMemberCounters[] = {0, 0, 3, 7, 120, 480, 999, 1001};
    for (int i = 0; i < kMemberPool; ++i) {
      store_.member_counters[MemberKey(i)] = kMemberCounters[((h3 >> 2) + i) & 7] / (1 + i % 2);
    }
    const bool join_first = h3 & 64;
    Boot(/*restart=*/false, join_first, member_count);
    if (h3 & 32) {
      for (int i = 0; i < member_count; ++i) MemberState(MemberKey(i), true);
    }
  }

  // Builds the coordinator from the store (at the start or after a restart) and adds `count`
  // members (the first ones of the pool, or after a restart every member there was).
  void Boot(bool restart, bool join_first, int count) {
    std::vector<PipelineKey> joining;
    if (restart) {
      for (const auto& [key, m] : members_) joining.push_back(key);
    } else {
      for (int i = 0; i < count; ++i) joining.push_back(MemberKey(i));
    }
    members_.clear();
    round_.reset();
    reserve_.reset();
    commit_.reset();
    wakeup_.reset();
    deadline_.reset();
    queued_.reset();
    confirmed_counter_ = 0;
    start_floor_ = std::max(store_.progress.id_counter, store_.progress.last_round_id);
    last_position_ = store_.progress.last_position;
    last_round_id_ = store_.progress.last_round_id;
    known_counter_ = start_floor_;
    last_trigger_.reset();
    last_end_lower_.reset();
    last_end_upper_.reset();
    admission_ = ModelAdmission::kNone;  // a new coordinator holds no place
    c_.emplace(spec_, store_.progress, clock_, options_);
    if (store_.progress.last_completed_at_ms > 0) {
      // Start maps the last completion's wall time onto the steady clock.
      const Millis age{
          std::max<int64_t>(0, clock_.WallMs() - store_.progress.last_completed_at_ms)};
      last_trigger_ = clock_.Peek() - age;
      last_end_lower_ = last_trigger_;
      last_end_upper_ = last_trigger_;
    }
    if (join_first) {
      for (const auto& key : joining) Join(key);
    }
    GROUP_FUZZ_TRACE("start");
    Apply("Start", c_->Start());
    if (!join_first) {
      for (const auto& key : joining) Join(key);
    }
  }

  // Positions on half the inputs: none, none, 10 or 100 a round.
  static int64_t PositionIntervalFrom(uint8_t bits) {
    static constexpr int64_t kPositionIntervals[] = {0, 0, 10, 100};
    return kPositionIntervals[bits & 3];
  }

  static AlignmentGroupSpec SpecFromByte(uint8_t b) {
    static constexpr int64_t kIntervals[] = {10, 100, 1000, 10'000};
    static constexpr int64_t kTimeouts[] = {1, 50, 500, 5'000};
    static constexpr int64_t kPauses[] = {0, 50, 1000, 20'000};
    AlignmentGroupSpec spec;
    spec.name = "g";
    spec.interval_ms = kIntervals[b & 3];
    spec.timeout_ms = kTimeouts[(b >> 2) & 3];
    spec.min_pause_ms = kPauses[(b >> 4) & 3];
    spec.position_interval = PositionIntervalFrom(b >> 6);
    return spec;
  }

  // ---- events ---------------------------------------------------------------------------------

  void Event() {
    const uint8_t op = in_.Byte() % 29;
    switch (op) {
      case 0: {  // time passes (timers do not fire by themselves)
        const uint8_t b = in_.Byte();
        const int64_t ms = b < 200 ? b : (b - 199) * 500;
        GROUP_FUZZ_TRACE("advance " + std::to_string(ms) + " ms");
        clock_.Advance(Millis(ms));
        break;
      }
      case 1:  // the wakeup fires if it is due
        if (wakeup_ && *wakeup_ <= clock_.Peek()) FireWakeup();
        break;
      case 2:  // time runs to the next timer, which fires
        RunToNextTimer();
        break;
      case 3:  // a stale wakeup (a replaced timer's handler already queued runs)
        GROUP_FUZZ_TRACE("spurious wakeup");
        Apply("OnWakeup(spurious)", c_->OnWakeup());
        break;
      case 4:  // the deadline fires with its armed id, if due
        if (deadline_ && deadline_->at <= clock_.Peek()) FireDeadline();
        break;
      case 5: {  // a deadline fires with a stale or future id
        const int64_t id = PickId(in_.Byte());
        if (deadline_ && deadline_->id == id) break;
        if (round_ && round_->id == id && !round_->committing) break;  // its own, early: no
        GROUP_FUZZ_TRACE("stale deadline " + std::to_string(id));
        expect_ = Expect::kNoActions;
        Apply("OnDeadline(stale)", c_->OnDeadline(id));
        break;
      }
      case 6:
      case 7: {  // a member reports (not) ready
        const PipelineKey key = PickMember(in_.Byte());
        MemberState(key, op == 6);
        break;
      }
      case 8: {
        const uint8_t m = in_.Byte(), v = in_.Byte();
        Positions(PickMember(m), m, v);
        break;
      }
      case 9: {  // a member reports done for some id
        const uint8_t m = in_.Byte(), id = in_.Byte();
        Done(PickMember(m), PickId(id));
        break;
      }
      case 10:  // every member still waited for reports done for the round in flight
        if (round_ && !round_->committing) {
          const std::set<PipelineKey> waiting = round_->waiting;
          for (const auto& key : waiting) Done(key, round_->id);
        }
        break;
      case 11: {
        const uint8_t m = in_.Byte(), id = in_.Byte(), kind = in_.Byte();
        Failed(PickMember(m), PickId(id), kind);
        break;
      }
      case 12:
        if (reserve_) CompleteReserve(true);
        break;
      case 13:
        if (reserve_) CompleteReserve(false);
        break;
      case 14:
        if (commit_) CompleteCommit(true);
        break;
      case 15:
        if (commit_) CompleteCommit(false);
        break;
      case 16: WrongCommitReport(in_.Byte()); break;
      case 17: {
        const uint8_t b = in_.Byte();
        RequestRound(b);
        break;
      }
      case 18:
        GROUP_FUZZ_TRACE("savepoint callers gone");
        Apply("CancelQueuedSavepoint", c_->CancelQueuedSavepoint());
        break;
      case 19: {
        const uint8_t m = in_.Byte(), f = in_.Byte();
        Add(m, f);
        break;
      }
      case 20: Remove(PickMember(in_.Byte())); break;
      case 21: UpdateSpec(in_.Byte()); break;
      case 22: Restart(in_.Byte()); break;
      case 23: {  // a burst of time passing with every timer firing on time
        const int steps = 1 + in_.Byte() % 8;
        for (int i = 0; i < steps; ++i) {
          if (!RunToNextTimer()) break;
          if (auto_store_) DrainStore();
        }
        break;
      }
      case 24: {  // a member's part of the round in flight is done, the others' come in a burst
        if (!round_ || round_->committing) break;
        const uint8_t b = in_.Byte();
        const std::set<PipelineKey> waiting = round_->waiting;
        int i = 0;
        for (const auto& key : waiting) {
          if (b & (1 << (i++ % 8))) Done(key, round_->id);
        }
        break;
      }
      case 26: {  // a member's tasks all committed some round (mostly the COMMITTING one)
        const uint8_t m = in_.Byte(), id = in_.Byte();
        const int64_t committing = committing_ ? committing_->id : 0;
        MemberCommitted(PickMember(m),
                        (id & 1) == 0 && committing > 0 ? committing : PickId(id >> 1));
        break;
      }
      case 28:  // the admission asked for comes (or a late answer to one left since)
        GROUP_FUZZ_TRACE("admitted");
        if (admission_ == ModelAdmission::kAsked) admission_ = ModelAdmission::kAdmitted;
        Apply("OnAdmitted", c_->OnAdmitted());
        break;
      case 27:  // every member still COMMITTING reports
        if (committing_) {
          const std::set<PipelineKey> waiting = committing_->waiting;
          const int64_t id = committing_->id;
          for (const auto& key : waiting) MemberCommitted(key, id);
        }
        break;
      case 25: {  // members report positions far enough for the next round
        const int64_t step = std::max<int64_t>(1, spec_.position_interval);
        const int64_t base = last_position_ + step + (in_.Byte() % 3) * step / 2;
        std::vector<PipelineKey> keys;
        for (const auto& [key, m] : members_) keys.push_back(key);
        for (const auto& key : keys) {
          MemberPositions p{base, base + step / 3, true};
          GROUP_FUZZ_TRACE("positions of " + key.ToString() + " " + std::to_string(p.min) + ".." +
                           std::to_string(p.max));
          members_[key].positions = p;
          Apply("OnMemberPositions", c_->OnMemberPositions(key, p));
        }
        break;
      }
    }
  }

  // A member of the pool: mostly a current one, now and then one that is not (or no longer).
  PipelineKey PickMember(uint8_t b) {
    if (!members_.empty() && (b & 0x80) == 0) {
      auto it = members_.begin();
      std::advance(it, b % members_.size());
      return it->first;
    }
    return MemberKey(b % kMemberPool);
  }

  // An id around the round in flight or the last one started.
  int64_t PickId(uint8_t b) {
    const int64_t base = round_ ? round_->id : max_id_;
    switch (b & 3) {
      case 0: return base;
      case 1: return base - 1 - (b >> 2) % 3;
      case 2: return base + 1 + (b >> 2) % 3;
      default: return (b >> 2) % 2 ? max_id_ : static_cast<int64_t>(b >> 2);
    }
  }

  void FireWakeup() {
    GROUP_FUZZ_TRACE("wakeup fires");
    wakeup_.reset();
    Apply("OnWakeup", c_->OnWakeup());
  }

  void FireDeadline() {
    const int64_t id = deadline_->id;
    deadline_.reset();
    GROUP_FUZZ_TRACE("deadline fires for " + std::to_string(id));
    const bool live = round_ && round_->id == id && !round_->committing;
    expect_ = live ? Expect::kEnd : Expect::kNoActions;
    if (live) {
      expected_result_ = GroupRoundResult::kExpired;
      at_fault_ = round_->waiting;
      fault_outcome_ = MemberOutcome::kExpired;
      everyone_.reset();
    }
    Apply("OnDeadline", c_->OnDeadline(id));
  }

  bool RunToNextTimer() {
    if (!wakeup_ && !deadline_) return false;
    const bool deadline_first = deadline_ && (!wakeup_ || deadline_->at < *wakeup_);
    clock_.AdvanceTo(deadline_first ? deadline_->at : *wakeup_);
    if (deadline_first) {
      FireDeadline();
    } else {
      FireWakeup();
    }
    return true;
  }

  void MemberState(const PipelineKey& key, bool ready) {
    // A member COMMITTING a group round is not ready until the group let it mark the round.
    if (ready && committing_ && committing_->members.count(key)) return;
    GROUP_FUZZ_TRACE(key.ToString() + (ready ? " ready" : " not ready"));
    auto it = members_.find(key);
    if (it != members_.end()) it->second.ready = ready;
    if (it == members_.end()) expect_ = Expect::kNoActions;
    Apply("OnMemberState", c_->OnMemberState(key, ready, ready ? "" : "fuzz: paused"));
  }

  // The commit phase: `key`'s tasks all committed round `id`. For the round the group holds
  // COMMITTING, every member is told at once, when the last one reported; for any other id the
  // member alone, at once.
  void MemberCommitted(const PipelineKey& key, int64_t id) {
    GROUP_FUZZ_TRACE(key.ToString() + " committed round " + std::to_string(id));
    std::set<PipelineKey> expected;
    if (committing_ && committing_->id == id && committing_->members.count(key)) {
      committing_->waiting.erase(key);
      if (committing_->waiting.empty()) {
        expected = committing_->members;
        committing_.reset();
      }
    } else {
      expected = {key};
    }
    GroupActions actions = c_->OnMemberCommitted(key, id);
    std::set<PipelineKey> marked;
    for (const auto& a : actions) {
      if (auto* m = std::get_if<MarkMemberCommitted>(&a)) {
        GROUP_FUZZ_CHECK(m->checkpoint_id == id, "MarkMemberCommitted for another round");
        GROUP_FUZZ_CHECK(marked.insert(m->member).second, "MarkMemberCommitted twice to a member");
      }
    }
    GROUP_FUZZ_CHECK(marked == expected, "round " + std::to_string(id) + " marked for " +
                                             std::to_string(marked.size()) +
                                             " member(s), not the " +
                                             std::to_string(expected.size()) +
                                             " expected (every member committed, "
                                             "or the untracked one alone)");
    marks_checked_ = true;
    Apply("OnMemberCommitted", std::move(actions), /*allow_logs=*/true);
  }

  void Positions(const PipelineKey& key, uint8_t m, uint8_t v) {
    const int64_t step = std::max<int64_t>(1, spec_.position_interval);
    const int64_t low = last_position_ + (v & 0x3f) * step / 8;
    MemberPositions p{low, low + (v >> 6) * step / 2, (m & 0x40) == 0};
    GROUP_FUZZ_TRACE("positions of " + key.ToString() + " " + std::to_string(p.min) + ".." +
                     std::to_string(p.max) + (p.all_reported ? "" : " (not all tasks)"));
    auto it = members_.find(key);
    if (it != members_.end()) it->second.positions = p;
    if (it == members_.end()) expect_ = Expect::kNoActions;
    Apply("OnMemberPositions", c_->OnMemberPositions(key, p));
  }

  void Done(const PipelineKey& key, int64_t id) {
    GROUP_FUZZ_TRACE(key.ToString() + " done with " + std::to_string(id));
    const bool live =
        round_ && round_->id == id && !round_->committing && round_->waiting.count(key);
    if (live) {
      round_->waiting.erase(key);
      done_this_call_ = true;
    } else {
      expect_ = Expect::kNoActions;
    }
    CheckpointCommit commit;
    commit.key = key;
    commit.checkpoint.checkpoint_id = id;
    Apply("OnMemberDone", c_->OnMemberDone(key, id, std::move(commit)));
    if (live && round_ && round_->id == id && !round_->waiting.empty()) {
      GROUP_FUZZ_CHECK(!round_->committing, "committed before every member was done");
    }
    if (live && round_ && round_->id == id && round_->waiting.empty()) {
      GROUP_FUZZ_CHECK(round_->committing, "every member of round " + std::to_string(id) +
                                               " is done but no CommitGroupRound was issued");
    }
  }

  void Failed(const PipelineKey& key, int64_t id, uint8_t kind_byte) {
    static constexpr MemberFailure kFailures[] = {MemberFailure::kDeclined, MemberFailure::kExpired,
                                                  MemberFailure::kTaskLost, MemberFailure::kAborted,
                                                  MemberFailure::kPassedPosition};
    const MemberFailure failure = kFailures[kind_byte % 5];
    GROUP_FUZZ_TRACE(key.ToString() + " failed " + std::to_string(id) + " (" +
                     std::to_string(kind_byte % 5) + ")");
    const bool live =
        round_ && round_->id == id && !round_->committing && round_->waiting.count(key);
    if (!live) {
      expect_ = Expect::kNoActions;
    } else {
      expect_ = Expect::kEnd;
      at_fault_ = {key};
      everyone_.reset();
      switch (failure) {
        case MemberFailure::kDeclined:
        case MemberFailure::kPassedPosition:
          expected_result_ = GroupRoundResult::kFailed;
          fault_outcome_ = MemberOutcome::kFailed;
          break;
        case MemberFailure::kExpired:
          expected_result_ = GroupRoundResult::kExpired;
          fault_outcome_ = MemberOutcome::kExpired;
          break;
        case MemberFailure::kTaskLost:
        case MemberFailure::kAborted:
          expected_result_ = GroupRoundResult::kAborted;
          everyone_ = MemberOutcome::kAborted;
          // Not ready until it says otherwise.
          members_[key].ready = false;
          break;
      }
    }
    Apply("OnMemberFailed", c_->OnMemberFailed(key, id, failure, "fuzz"));
  }

  void RequestRound(uint8_t b) {
    static constexpr CheckpointKind kKinds[] = {
        CheckpointKind::kCheckpoint, CheckpointKind::kCheckpoint, CheckpointKind::kSavepoint,
        CheckpointKind::kSavepointAndStop};
    static constexpr int64_t kTimeouts[] = {1, 50, 1000, 60'000};
    const CheckpointKind kind = kKinds[b & 3];
    const Millis timeout(kTimeouts[(b >> 2) & 3]);
    GROUP_FUZZ_TRACE(std::string("request ") + CheckpointKindName(kind) + " timeout " +
                     std::to_string(timeout.count()) + " ms");
    int64_t id = -1;
    const SteadyTime before = clock_.Peek();
    const bool had_queued = queued_.has_value();
    auto outcome = c_->RequestRound(kind, &id, timeout);
    if (!outcome.status.ok()) {
      GROUP_FUZZ_CHECK(outcome.actions.empty(), "a refused RequestRound has actions");
      GROUP_FUZZ_CHECK(id == 0, "a refused RequestRound names id " + std::to_string(id));
      GROUP_FUZZ_CHECK(kind == CheckpointKind::kCheckpoint || had_queued || members_.empty(),
                       "a savepoint was refused with nothing queued: " + outcome.status.message());
      GROUP_FUZZ_TRACE("  refused: " + outcome.status.message());
      Apply("RequestRound(refused)", std::move(outcome.actions));
      return;
    }
    GROUP_FUZZ_CHECK(!members_.empty(),
                     "a round requested of a group without members was accepted");
    if (id == 0) {
      GROUP_FUZZ_CHECK(kind != CheckpointKind::kCheckpoint,
                       "a checkpoint was accepted without starting");
      GROUP_FUZZ_CHECK(!had_queued, "a second savepoint was queued");
      queued_ = Queued{kind, before + timeout};
    }
    const int64_t started_before = max_id_;
    forced_ = id > 0;  // started now, past the gates
    Apply("RequestRound", std::move(outcome.actions));
    forced_ = false;
    if (id > 0) {
      GROUP_FUZZ_CHECK(
          round_ && round_->id == id && max_id_ > started_before,
          "RequestRound named id " + std::to_string(id) + " but started no such round");
      GROUP_FUZZ_CHECK(round_->kind == kind, "RequestRound started a round of another kind");
    }
  }

  void Add(uint8_t m, uint8_t f) {
    const PipelineKey key = MemberKey(m % kMemberPool);
    if (members_.count(key)) return;  // the runtime adds a pipeline once
    // Its own counter: what the store holds (raised by group commits and at leaving), or now and
    // then higher (it ran rounds of its own before it joined).
    int64_t& counter = store_.member_counters[key];
    if (f & 1) counter += 1 + (f >> 1) % 200;
    Join(key);
  }

  void Join(const PipelineKey& key) {
    const int64_t counter = store_.member_counters[key];
    GROUP_FUZZ_TRACE(key.ToString() + " joins (its ids up to " + std::to_string(counter) + ")");
    ModelMember& m = members_[key];
    m = ModelMember{};
    m.id_floor = counter;
    expect_ = Expect::kNoActions;  // a joining member is not ready: nothing can start
    Apply("AddMember", c_->AddMember(key, counter), /*allow_logs=*/true);
  }

  void Remove(const PipelineKey& key) {
    GROUP_FUZZ_TRACE(key.ToString() + " leaves");
    const bool member = members_.count(key) > 0;
    if (!member) expect_ = Expect::kNoActions;
    if (member && round_ && round_->members.count(key) && !round_->committing) {
      expect_ = Expect::kEnd;
      expected_result_ = GroupRoundResult::kAborted;
      at_fault_.clear();
      everyone_ = MemberOutcome::kAborted;
    }
    members_.erase(key);
    std::set<PipelineKey> released;  // the others no longer wait for it
    if (committing_ && committing_->members.erase(key) > 0) {
      committing_->waiting.erase(key);
      if (committing_->waiting.empty()) {
        released = committing_->members;
        committing_.reset();
      }
    }
    GroupActions actions = c_->RemoveMember(key, "fuzz: deleted");
    std::set<PipelineKey> marked;
    for (const auto& a : actions) {
      if (auto* m = std::get_if<MarkMemberCommitted>(&a)) marked.insert(m->member);
    }
    GROUP_FUZZ_CHECK(marked == released,
                     "a member leaving a COMMITTING round released the wrong members");
    marks_checked_ = true;
    Apply("RemoveMember", std::move(actions), /*allow_logs=*/true);
    // Its counter is raised to the group's before the record goes.
    int64_t& counter = store_.member_counters[key];
    counter = std::max(counter, store_.progress.id_counter);
  }

  void UpdateSpec(uint8_t b) {
    AlignmentGroupSpec spec = SpecFromByte(b);
    spec.commit_timeout_ms = spec_.commit_timeout_ms;  // kept: the setup chose it
    if (!ValidateGroupSpec(spec).ok()) return;         // the admin API validates first
    GROUP_FUZZ_TRACE("policy: interval " + std::to_string(spec.interval_ms) + " timeout " +
                     std::to_string(spec.timeout_ms) + " min pause " +
                     std::to_string(spec.min_pause_ms) + " positions " +
                     std::to_string(spec.position_interval));
    spec_ = spec;
    Apply("UpdateSpec", c_->UpdateSpec(spec));
  }

  // The daemon stops (or crashes) and starts again: outstanding store writes land or not, the
  // coordinator is rebuilt from what the store holds and every member joins again.
  void Restart(uint8_t b) {
    GROUP_FUZZ_TRACE("restart");
    if (reserve_ && (b & 1)) {
      store_.progress.id_counter = std::max(store_.progress.id_counter, *reserve_);
      GROUP_FUZZ_TRACE("  the reservation up to " + std::to_string(*reserve_) + " landed");
    }
    if (commit_ && (b & 2)) {
      GROUP_FUZZ_TRACE("  the commit of " + std::to_string(commit_->checkpoint_id) + " landed");
      StoreCommit(*commit_);
    }
    committing_.reset();  // the group forgets which round was COMMITTING: members mark alone
    Boot(/*restart=*/true, (b & 4) != 0, 0);
    if (b & 8) {
      std::vector<PipelineKey> keys;
      for (const auto& [key, m] : members_) keys.push_back(key);
      for (const auto& key : keys) MemberState(key, true);
    }
  }

  // ---- the store ------------------------------------------------------------------------------

  void StoreCommit(const CommitGroupRound& commit) {
    GroupProgress& p = store_.progress;
    const int64_t counter = std::max(p.id_counter, commit.progress_after.id_counter);
    p = commit.progress_after;
    p.id_counter = counter;
    for (const auto& m : commit.members) {
      int64_t& c = store_.member_counters[m.key];
      c = std::max(c, commit.checkpoint_id);
    }
  }

  void CompleteReserve(bool ok) {
    const int64_t counter = *reserve_;
    reserve_.reset();
    if (ok) {
      GROUP_FUZZ_TRACE("store: ids reserved up to " + std::to_string(counter));
      store_.progress.id_counter = std::max(store_.progress.id_counter, counter);
      confirmed_counter_ = std::max(confirmed_counter_, counter);
      known_counter_ = std::max(known_counter_, counter);
      Apply("OnIdsReserved", c_->OnIdsReserved(counter));
    } else {
      GROUP_FUZZ_TRACE("store: id reservation failed");
      Apply("OnIdsReserveFailed", c_->OnIdsReserveFailed(Status::Internal("fuzz: disk full")));
    }
  }

  void CompleteCommit(bool ok) {
    const CommitGroupRound commit = std::move(*commit_);
    commit_.reset();
    const int64_t id = commit.checkpoint_id;
    const bool live = round_ && round_->id == id && round_->committing;
    GROUP_FUZZ_CHECK(live, "the store holds a commit of " + std::to_string(id) +
                               " but the model's round with the store is another");
    expect_ = Expect::kEnd;
    if (ok) {
      GROUP_FUZZ_TRACE("store: round " + std::to_string(id) + " durable");
      StoreCommit(commit);
      expected_result_ = GroupRoundResult::kCompleted;
      committed_position_ = round_->position;
      if (spec_.commit_timeout_ms > 0) {
        // COMMITTING in every member of the round that is still one: none ready until marked.
        ModelCommitting committing{id, {}, {}};
        for (const auto& key : round_->members) {
          auto m = members_.find(key);
          if (m == members_.end()) continue;
          m->second.ready = false;
          committing.members.insert(key);
        }
        committing.waiting = committing.members;
        if (!committing.members.empty()) committing_ = std::move(committing);
      }
      Apply("OnCommitted", c_->OnCommitted(id));
    } else {
      GROUP_FUZZ_TRACE("store: round " + std::to_string(id) + " failed");
      expected_result_ = GroupRoundResult::kFailed;
      at_fault_.clear();
      everyone_ = MemberOutcome::kStoreFailed;
      Apply("OnCommitFailed", c_->OnCommitFailed(id, Status::Internal("fuzz: disk full")));
    }
  }

  // The store reports an id it was not handed (or no longer holds): must change nothing.
  void WrongCommitReport(uint8_t b) {
    int64_t id = PickId(b >> 1);
    if (commit_ && id == commit_->checkpoint_id) id += 1 + (b >> 7);
    expect_ = Expect::kNoActions;
    if (b & 1) {
      GROUP_FUZZ_TRACE("store: wrong id " + std::to_string(id) + " reported durable");
      Apply("OnCommitted(wrong id)", c_->OnCommitted(id));
    } else {
      GROUP_FUZZ_TRACE("store: wrong id " + std::to_string(id) + " reported failed");
      Apply("OnCommitFailed(wrong id)", c_->OnCommitFailed(id, Status::Internal("fuzz")));
    }
  }

  // The store completes everything it holds, successfully.
  void DrainStore() {
    for (int i = 0; reserve_ || commit_; ++i) {
      if (i >= 1000) Fail("store writes never settle");
      if (reserve_) {
        CompleteReserve(true);
      } else {
        CompleteCommit(true);
      }
    }
  }

  // ---- checking one call's actions ------------------------------------------------------------

  // Carries out and checks the actions of one coordinator call. `expect_` (set by the caller)
  // says whether the call must end the round in flight (with expected_result_, at_fault_,
  // fault_outcome_, everyone_) or must have no actions at all.
  void Apply(const char* call, GroupActions actions, bool allow_logs = false) {
    call_ = call;
    const bool marks_checked = std::exchange(marks_checked_, false);
    const Expect expect = expect_;
    expect_ = Expect::kNothing;
    const bool forced = forced_;
    const SteadyTime call_start = clock_.Peek();
    if (expect == Expect::kNoActions) {
      for (const auto& a : actions) {
        if (allow_logs && std::holds_alternative<Log>(a)) continue;
        // Leaving the admission line changes nothing the group does.
        if (std::holds_alternative<LeaveAdmission>(a)) continue;
        Fail("a call that must change nothing had an action: " + Describe(a));
      }
    }
    bool ended = false;
    std::optional<int64_t> started;
    std::map<PipelineKey, MemberOutcome> aborts;  // of the round in flight
    std::set<PipelineKey> durable;
    for (auto& action : actions) {
      if (g_verbose) std::fprintf(stderr, "    -> %s\n", Describe(action).c_str());
      if (auto* a = std::get_if<AskAdmission>(&action)) {
        GROUP_FUZZ_CHECK(options_.admission != nullptr, "asked for admission without a cap");
        GROUP_FUZZ_CHECK(admission_ != ModelAdmission::kAdmitted,
                         "asked for admission while admitted");
        GROUP_FUZZ_CHECK(a->request.rounds == static_cast<int64_t>(members_.size()),
                         "a group round asks for " + std::to_string(a->request.rounds) +
                             " rounds, not its " + std::to_string(members_.size()) + " members");
        admission_ = ModelAdmission::kAsked;
        continue;
      }
      if (std::holds_alternative<LeaveAdmission>(action)) {
        GROUP_FUZZ_CHECK(admission_ != ModelAdmission::kNone,
                         "left an admission it did not ask for");
        admission_ = ModelAdmission::kNone;
        continue;
      }
      if (std::holds_alternative<MarkMemberCommitted>(action)) {
        GROUP_FUZZ_CHECK(marks_checked, "MarkMemberCommitted from " + std::string(call) +
                                            ", which reports no member's commit");
        continue;
      }
      if (auto* a = std::get_if<StartMemberRound>(&action)) {
        // An operator's round (forced) does not wait in line; any other waits for admission.
        GROUP_FUZZ_CHECK(!options_.admission || forced || admission_ == ModelAdmission::kAdmitted ||
                             (round_ && round_->id == a->checkpoint_id),
                         "a group round started without admission");
        GROUP_FUZZ_CHECK(!committing_,
                         "round " + std::to_string(a->checkpoint_id) + " started while round " +
                             std::to_string(committing_ ? committing_->id : 0) + " is COMMITTING");
        if (!round_ || round_->id != a->checkpoint_id) {
          GROUP_FUZZ_CHECK(!round_, "round " + std::to_string(a->checkpoint_id) +
                                        " started while round " +
                                        std::to_string(round_ ? round_->id : 0) + " is in flight");
          OpenRound(*a, forced);
          started = a->checkpoint_id;
        }
        GROUP_FUZZ_CHECK(started == a->checkpoint_id,
                         "StartMemberRound for a round that started earlier");
        GROUP_FUZZ_CHECK(!round_->started_seen, "StartMemberRound after GroupRoundStarted");
        GROUP_FUZZ_CHECK(
            a->kind == round_->kind && a->position == round_->position,
            "StartMemberRound: members of one round told different kinds or positions");
        auto m = members_.find(a->member);
        GROUP_FUZZ_CHECK(m != members_.end(),
                         "StartMemberRound to " + a->member.ToString() + ", not a member");
        GROUP_FUZZ_CHECK(m->second.ready,
                         "StartMemberRound to " + a->member.ToString() + ", not ready");
        GROUP_FUZZ_CHECK(a->checkpoint_id > m->second.id_floor,
                         "round id " + std::to_string(a->checkpoint_id) +
                             " is not above the id counter " + std::to_string(m->second.id_floor) +
                             " of member " + a->member.ToString());
        GROUP_FUZZ_CHECK(round_->members.insert(a->member).second,
                         "StartMemberRound twice to " + a->member.ToString());
        round_->waiting.insert(a->member);
      } else if (auto* a = std::get_if<ArmGroupDeadline>(&action)) {
        GROUP_FUZZ_CHECK(round_ && started == a->checkpoint_id && !round_->deadline_seen,
                         "ArmGroupDeadline not for a round started in this call");
        GROUP_FUZZ_CHECK(a->at >= call_start + Millis(spec_.timeout_ms) &&
                             a->at <= clock_.Peek() + Millis(spec_.timeout_ms),
                         "the deadline is not the trigger time plus timeout_ms");
        round_->deadline_seen = true;
        round_->triggered_at = a->at - Millis(spec_.timeout_ms);
        deadline_ = Deadline{a->at, a->checkpoint_id};
      } else if (auto* a = std::get_if<GroupRoundStarted>(&action)) {
        GROUP_FUZZ_CHECK(round_ && started == a->checkpoint_id && !round_->started_seen,
                         "GroupRoundStarted not for a round started in this call");
        GROUP_FUZZ_CHECK(a->kind == round_->kind && a->position == round_->position,
                         "GroupRoundStarted does not match its StartMemberRound");
        GROUP_FUZZ_CHECK(round_->deadline_seen, "a round started without its deadline armed");
        std::set<PipelineKey> current;
        for (const auto& [key, m] : members_) current.insert(key);
        GROUP_FUZZ_CHECK(round_->members == current, "round " + std::to_string(a->checkpoint_id) +
                                                         " started without every current member");
        round_->started_seen = true;
        CheckRoundStart(forced);
      } else if (std::holds_alternative<CancelGroupDeadline>(action)) {
        deadline_.reset();
      } else if (auto* a = std::get_if<ArmGroupWakeup>(&action)) {
        wakeup_ = a->at;
      } else if (auto* a = std::get_if<ReserveGroupIds>(&action)) {
        GROUP_FUZZ_CHECK(!reserve_, "a second ReserveGroupIds while one is with the store");
        GROUP_FUZZ_CHECK(a->new_counter > known_counter_ && a->new_counter <= kMaxCheckpointId,
                         "ReserveGroupIds up to " + std::to_string(a->new_counter) +
                             ", not above the counter " + std::to_string(known_counter_));
        reserve_ = a->new_counter;
      } else if (auto* a = std::get_if<CommitGroupRound>(&action)) {
        GROUP_FUZZ_CHECK(round_ && round_->id == a->checkpoint_id,
                         "CommitGroupRound of " + std::to_string(a->checkpoint_id) +
                             ", not the round in flight");
        GROUP_FUZZ_CHECK(!round_->committing && !commit_, "a second CommitGroupRound of one round");
        GROUP_FUZZ_CHECK(round_->waiting.empty() && done_this_call_,
                         "CommitGroupRound of " + std::to_string(a->checkpoint_id) + " while " +
                             std::to_string(round_->waiting.size()) + " member(s) are not done");
        std::set<PipelineKey> parts;
        for (const auto& c : a->members) {
          GROUP_FUZZ_CHECK(c.checkpoint.checkpoint_id == a->checkpoint_id,
                           "a part of another round");
          GROUP_FUZZ_CHECK(parts.insert(c.key).second, "two parts of " + c.key.ToString());
        }
        GROUP_FUZZ_CHECK(parts == round_->members,
                         "the commit does not hold exactly the round's members");
        GROUP_FUZZ_CHECK(a->progress_after.last_round_id == a->checkpoint_id &&
                             a->progress_after.last_position == round_->position,
                         "the commit's group progress does not name its round");
        GROUP_FUZZ_CHECK(a->progress_after.id_counter <= store_.progress.id_counter,
                         "the commit claims ids the store never reserved");
        GROUP_FUZZ_CHECK(!ended, "CommitGroupRound after the round ended");
        round_->committing = true;
        commit_ = *a;
      } else if (auto* a = std::get_if<AbortMemberRound>(&action)) {
        GROUP_FUZZ_CHECK(round_ && round_->id == a->checkpoint_id,
                         "AbortMemberRound for " + std::to_string(a->checkpoint_id) +
                             ", not the round in flight");
        GROUP_FUZZ_CHECK(round_->members.count(a->member),
                         "AbortMemberRound to " + a->member.ToString() + ", not in round " +
                             std::to_string(a->checkpoint_id));
        GROUP_FUZZ_CHECK(aborts.emplace(a->member, a->outcome).second,
                         "two AbortMemberRound to " + a->member.ToString());
        GROUP_FUZZ_CHECK(expect == Expect::kEnd, "round " + std::to_string(a->checkpoint_id) +
                                                     " aborted by a call that must not end it");
      } else if (auto* a = std::get_if<MemberRoundDurable>(&action)) {
        GROUP_FUZZ_CHECK(round_ && round_->id == a->checkpoint_id && round_->committing &&
                             expected_result_ == GroupRoundResult::kCompleted &&
                             expect == Expect::kEnd,
                         "MemberRoundDurable for " + std::to_string(a->checkpoint_id) +
                             " outside the store's confirmation of that round");
        GROUP_FUZZ_CHECK(
            round_->members.count(a->member) && durable.insert(a->member).second,
            "MemberRoundDurable to " + a->member.ToString() + ", not in the round or twice");
      } else if (auto* a = std::get_if<GroupRoundFinished>(&action)) {
        GROUP_FUZZ_CHECK(round_ && round_->id == a->checkpoint_id,
                         "GroupRoundFinished for " + std::to_string(a->checkpoint_id) +
                             ", not the round in flight");
        GROUP_FUZZ_CHECK(
            expect == Expect::kEnd && !ended,
            "round " + std::to_string(a->checkpoint_id) + " ended by a call that must not end it");
        CheckEnd(*a, aborts, durable, call_start);
        ended = true;
        aborts.clear();
        durable.clear();
      } else if (std::holds_alternative<GroupSavepointDropped>(action)) {
        GROUP_FUZZ_CHECK(queued_.has_value(), "GroupSavepointDropped with no savepoint queued");
        GROUP_FUZZ_CHECK(
            std::string(call_) == "CancelQueuedSavepoint" || clock_.Peek() >= queued_->deadline,
            "a queued savepoint dropped before its timeout");
        queued_.reset();
      }
    }
    GROUP_FUZZ_CHECK(aborts.empty() && durable.empty(),
                     "a round's members heard of its end but it did not");
    GROUP_FUZZ_CHECK(!started || (round_ && round_->started_seen),
                     "a round started without GroupRoundStarted");
    if (expect == Expect::kEnd) {
      GROUP_FUZZ_CHECK(ended, "round " + std::to_string(round_ ? round_->id : 0) + " did not end");
    }
    done_this_call_ = false;
    CheckQuiescent();
  }

  void OpenRound(const StartMemberRound& a, bool forced) {
    GROUP_FUZZ_CHECK(a.checkpoint_id > max_id_, "round id " + std::to_string(a.checkpoint_id) +
                                                    " is not above every id used before (" +
                                                    std::to_string(max_id_) + ")");
    GROUP_FUZZ_CHECK(a.checkpoint_id > start_floor_, "round id " + std::to_string(a.checkpoint_id) +
                                                         " is not above the stored counter " +
                                                         std::to_string(start_floor_));
    GROUP_FUZZ_CHECK(a.checkpoint_id <= confirmed_counter_,
                     "round id " + std::to_string(a.checkpoint_id) +
                         " is not within the ids the store confirmed reserved (" +
                         std::to_string(confirmed_counter_) + ")");
    max_id_ = a.checkpoint_id;
    ModelRound r;
    r.id = a.checkpoint_id;
    r.kind = a.kind;
    r.position = a.position;
    round_ = r;
    // Which round it is: an operator's (forced), the queued savepoint, or a periodic one.
    round_was_queued_ = false;
    if (!forced && queued_) {
      GROUP_FUZZ_CHECK(a.kind == queued_->kind,
                       "the round after a queued savepoint is not that savepoint");
      queued_.reset();
      round_was_queued_ = true;
    }
    GROUP_FUZZ_CHECK(forced || round_was_queued_ || a.kind == CheckpointKind::kCheckpoint,
                     "a savepoint round nobody asked for");
  }

  // The gates and the position of a round that started (GroupRoundStarted).
  void CheckRoundStart(bool forced) {
    const ModelRound& r = *round_;
    const int64_t step = spec_.position_interval;
    if (step <= 0) {
      GROUP_FUZZ_CHECK(r.position == 0, "a position without position_interval");
    } else {
      GROUP_FUZZ_CHECK(r.position % step == 0 && r.position > last_position_,
                       "position " + std::to_string(r.position) + " is not a multiple of " +
                           std::to_string(step) + " above the last round's " +
                           std::to_string(last_position_));
      for (const auto& [key, m] : members_) {
        if (m.positions) {
          GROUP_FUZZ_CHECK(r.position > m.positions->max,
                           "position " + std::to_string(r.position) + " is not above " +
                               key.ToString() + "'s " + std::to_string(m.positions->max));
        }
      }
    }
    const std::optional<SteadyTime> previous_trigger = last_trigger_;
    last_trigger_ = r.triggered_at;
    if (forced || round_was_queued_) return;
    // A periodic round: both gates were open.
    if (previous_trigger) {
      GROUP_FUZZ_CHECK(
          r.triggered_at >= *previous_trigger + Millis(spec_.interval_ms) - Millis(1),
          "a periodic round " + std::to_string(MsOf(r.triggered_at) - MsOf(*previous_trigger)) +
              " ms after the last trigger; interval_ms is " + std::to_string(spec_.interval_ms));
    }
    if (last_end_lower_ && spec_.min_pause_ms > 0) {
      GROUP_FUZZ_CHECK(r.triggered_at >= *last_end_lower_ + Millis(spec_.min_pause_ms) - Millis(1),
                       "a periodic round within min_pause_ms of the last round's end");
    }
    if (step > 0) {
      for (const auto& [key, m] : members_) {
        GROUP_FUZZ_CHECK(
            m.positions && m.positions->all_reported && m.positions->min >= last_position_ + step,
            "a periodic round while " + key.ToString() + "'s positions hold the gate");
      }
    }
  }

  void CheckEnd(const GroupRoundFinished& f, const std::map<PipelineKey, MemberOutcome>& aborts,
                const std::set<PipelineKey>& durable, SteadyTime call_start) {
    ModelRound& r = *round_;
    GROUP_FUZZ_CHECK(f.result == expected_result_, std::string("round ended ") +
                                                       ResultName(f.result) + ", expected " +
                                                       ResultName(expected_result_));
    if (f.result == GroupRoundResult::kCompleted) {
      GROUP_FUZZ_CHECK(r.committing, "a round completed that was never with the store");
      GROUP_FUZZ_CHECK(aborts.empty(), "a completed round aborted for some member");
      GROUP_FUZZ_CHECK(durable == r.members,
                       "MemberRoundDurable did not reach every member of the round");
      last_round_id_ = r.id;
      last_position_ = committed_position_;
    } else {
      GROUP_FUZZ_CHECK(durable.empty(), "MemberRoundDurable for a round that did not complete");
      std::set<PipelineKey> told;
      for (const auto& [key, outcome] : aborts) {
        told.insert(key);
        const MemberOutcome want = everyone_              ? *everyone_
                                   : at_fault_.count(key) ? fault_outcome_
                                                          : MemberOutcome::kAborted;
        GROUP_FUZZ_CHECK(outcome == want, "round " + std::to_string(r.id) + " ended " +
                                              OutcomeName(outcome) + " for " + key.ToString() +
                                              ", expected " + OutcomeName(want));
      }
      GROUP_FUZZ_CHECK(told == r.members,
                       "AbortMemberRound did not reach every member of the round");
    }
    last_end_lower_ = call_start;
    last_end_upper_ = clock_.Peek();
    round_.reset();
  }

  // After every call: the model and the coordinator agree, and nothing is left hanging.
  void CheckQuiescent() {
    GROUP_FUZZ_CHECK(c_->HasPendingRound() == round_.has_value() &&
                         c_->PendingRoundId() == (round_ ? round_->id : 0),
                     "HasPendingRound/PendingRoundId disagree with the actions (model: " +
                         std::to_string(round_ ? round_->id : 0) +
                         ", coordinator: " + std::to_string(c_->PendingRoundId()) + ")");
    std::vector<PipelineKey> keys;
    for (const auto& [key, m] : members_) keys.push_back(key);
    GROUP_FUZZ_CHECK(c_->Members() == keys, "Members() disagrees with the joins and leaves");
    GROUP_FUZZ_CHECK(c_->progress().last_round_id == last_round_id_,
                     "progress().last_round_id is " + std::to_string(c_->progress().last_round_id) +
                         ", the last completed round " + std::to_string(last_round_id_));
    GROUP_FUZZ_CHECK(c_->progress().id_counter == known_counter_,
                     "progress().id_counter is " + std::to_string(c_->progress().id_counter) +
                         ", the store confirmed " + std::to_string(known_counter_));
    for (int i = 0; i < kMemberPool; ++i) {
      const PipelineKey key = MemberKey(i);
      const bool committing_with = round_ && round_->committing && round_->members.count(key);
      GROUP_FUZZ_CHECK(c_->CommittingWith(key) == committing_with,
                       "CommittingWith disagrees for " + key.ToString());
    }
    if (round_) {
      GROUP_FUZZ_CHECK(round_->started_seen, "a round in flight that was never announced");
      if (!round_->committing) {
        GROUP_FUZZ_CHECK(
            deadline_ && deadline_->id == round_->id,
            "round " + std::to_string(round_->id) + " is in flight without its deadline armed");
      }
    }
    const GroupExplanation e = c_->Explain();
    GROUP_FUZZ_CHECK(e.pending_checkpoint_id == (round_ ? round_->id : 0),
                     "Explain's pending round disagrees");
    GROUP_FUZZ_CHECK(e.last_round_id == last_round_id_, "Explain's last round disagrees");
    GROUP_FUZZ_CHECK(e.committing_checkpoint_id == (committing_ ? committing_->id : 0),
                     "Explain's COMMITTING round disagrees");
    if (round_) {
      std::set<PipelineKey> holding;
      for (const auto& [key, why] : e.holding) holding.insert(key);
      GROUP_FUZZ_CHECK(holding == round_->waiting, "Explain does not name the members not done");
      CheckQueuedSavepointWakes();
      return;
    }
    std::set<PipelineKey> not_ready;
    for (const auto& [key, m] : members_) {
      if (!m.ready) not_ready.insert(key);
    }
    std::set<PipelineKey> holding;
    for (const auto& [key, why] : e.holding) holding.insert(key);
    GROUP_FUZZ_CHECK(holding == not_ready, "Explain does not name the members that are not ready");
    if (members_.empty() || !not_ready.empty()) {
      // Held: nothing can start. A queued savepoint must still be dropped at its timeout.
      CheckQueuedSavepointWakes();
      return;
    }
    // Idle, every member ready. In the admission line, its answer (OnAdmitted) drives it on.
    if (admission_ == ModelAdmission::kAsked) {
      CheckQueuedSavepointWakes();
      return;
    }
    if (queued_) {
      GROUP_FUZZ_CHECK(
          reserve_.has_value() || (wakeup_ && *wakeup_ <= clock_.Peek() + Millis(1000)),
          "a savepoint is queued although the group could start it, and nothing will");
      return;
    }
    bool positions_open = true;
    if (spec_.position_interval > 0) {
      for (const auto& [key, m] : members_) {
        if (!m.positions || !m.positions->all_reported ||
            m.positions->min < last_position_ + spec_.position_interval) {
          positions_open = false;
        }
      }
    }
    GROUP_FUZZ_CHECK(e.waiting_for_positions == !positions_open,
                     "Explain's position gate disagrees");
    if (!positions_open) return;  // the next positions report opens it
    if (reserve_) return;         // its answer tries again
    GROUP_FUZZ_CHECK(wakeup_.has_value(),
                     "the schedule stopped: an idle group, every member ready, with "
                     "no wakeup armed and no id reservation with the store");
    // Armed in time: when the gates open, or at most a second later (a failed reservation's
    // retry may replace it).
    SteadyTime opens = clock_.Peek();
    if (last_trigger_) opens = std::max(opens, *last_trigger_ + Millis(spec_.interval_ms));
    if (last_end_upper_ && spec_.min_pause_ms > 0) {
      opens = std::max(opens, *last_end_upper_ + Millis(spec_.min_pause_ms));
    }
    GROUP_FUZZ_CHECK(*wakeup_ <= opens + Millis(1001),
                     "the next round's wakeup is armed " +
                         std::to_string(MsOf(*wakeup_) - MsOf(opens)) + " ms after the gates open");
  }

  // A queued savepoint is dropped at its timeout: a wakeup is armed by then.
  void CheckQueuedSavepointWakes() {
    if (!queued_) return;
    GROUP_FUZZ_CHECK(wakeup_.has_value() &&
                         *wakeup_ <= std::max(queued_->deadline, clock_.Peek()) + Millis(1000),
                     "a savepoint is queued with no wakeup armed by its timeout (" +
                         std::to_string(MsOf(queued_->deadline)) + " ms; wakeup " +
                         (wakeup_ ? std::to_string(MsOf(*wakeup_)) + " ms" : std::string("none")) +
                         ")");
  }

  GroupInput& in_;
  GroupFuzzClock clock_;
  GroupOptions options_;
  // Where the group stands with the admission, as its actions say (AskAdmission, LeaveAdmission,
  // and the fuzzer's own answers).
  enum class ModelAdmission { kNone, kAsked, kAdmitted };
  ModelAdmission admission_ = ModelAdmission::kNone;
  AlignmentGroupSpec spec_;
  std::optional<GroupCoordinator> c_;
  bool auto_store_ = false;
  int event_index_ = -1;
  const char* call_ = "none";  // the coordinator call being checked

  Store store_;
  std::map<PipelineKey, ModelMember> members_;
  std::optional<ModelRound> round_;
  // A durable round with a commit phase whose members have not all committed it.
  struct ModelCommitting {
    int64_t id = 0;
    std::set<PipelineKey> members;
    std::set<PipelineKey> waiting;
  };
  std::optional<ModelCommitting> committing_;
  bool marks_checked_ = false;  // the call being applied had its MarkMemberCommitted checked
  bool round_was_queued_ = false;
  std::optional<int64_t> reserve_;          // the reservation with the store
  std::optional<CommitGroupRound> commit_;  // the commit with the store
  std::optional<SteadyTime> wakeup_;        // the wakeup timer
  std::optional<Deadline> deadline_;        // the deadline timer
  std::optional<Queued> queued_;            // a savepoint waiting for its round
  int64_t max_id_ = 0;                      // the highest id ever handed out (across restarts)
  int64_t start_floor_ = 0;        // the stored counter and last round at the last (re)start
  int64_t confirmed_counter_ = 0;  // the highest counter the store confirmed since then
  int64_t known_counter_ = 0;      // what progress().id_counter should say
  int64_t last_round_id_ = 0;      // the last completed round
  int64_t last_position_ = 0;      // its position
  int64_t committed_position_ = 0;
  std::optional<SteadyTime> last_trigger_;
  std::optional<SteadyTime> last_end_lower_;  // no later than the last round's end
  std::optional<SteadyTime> last_end_upper_;

  // Set by the caller of Apply for the call it makes.
  Expect expect_ = Expect::kNothing;
  GroupRoundResult expected_result_ = GroupRoundResult::kCompleted;
  std::set<PipelineKey> at_fault_;
  MemberOutcome fault_outcome_ = MemberOutcome::kAborted;
  std::optional<MemberOutcome> everyone_;
  bool forced_ = false;
  bool done_this_call_ = false;
};

}  // namespace
}  // namespace ckpt

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* v = std::getenv("CKPT_FUZZ_VERBOSE");
  ckpt::g_verbose = v && *v && *v != '0';
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ckpt::GroupInput in(data, size);
  ckpt::GroupDriver driver(in);
  driver.Run();
  return 0;
}
