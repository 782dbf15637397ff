// libFuzzer target: PipelineCoordinator's event handling. The input is decoded as a short header
// (how the pipeline was stored and how the world behaves) and a sequence of events: time passing,
// timers firing (due, stale, spurious), worker sessions registering, ending, acking and declining
// with arbitrary ids, the store completing or failing what it was handed (or reporting a wrong id),
// and operator calls. The coordinator is driven through CheckedCoordinator
// (tests/support/coordinator_invariants.h), which carries the actions out the way the runtime does
// (timers armed and replaced, store writes queued) and checks the invariants listed there after
// every coordinator call; a broken one prints what broke and traps (the check does not depend on
// NDEBUG). The coordinator unit tests are held to the same model.
// After Delete only time and timer handlers reach the coordinator, as in
// runtime/pipeline_runner*.cc.
//
// CKPT_FUZZ_VERBOSE=1 prints every event and action (to replay a reproducer by hand).
// One file: the input's decoder and the events it drives, which only make sense together.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/pipeline_coordinator.h"
#include "core/spec_validation.h"
#include "fuzz_input.h"
#include "support/coordinator_invariants.h"

namespace ckpt {
namespace {

using testing::CheckedCoordinator;

bool g_verbose = false;

using fuzz::FuzzClock;
using Input = fuzz::FuzzInput;

// --------------------------------------------------------------------------------------------
// The driver: events from the input, played against a checked coordinator; the driver plays the
// runtime (timers) and the store, reading what is armed and outstanding from the model.

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
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& message) {
    std::fprintf(stderr,
                 "\ncoordinator_fuzzer: %s\n  event #%d\n"
                 "  (rerun the input with CKPT_FUZZ_VERBOSE=1 to see every event and action)\n",
                 message.c_str(), event_index_);
    std::fflush(stderr);
    __builtin_trap();
  }

  // ---- setup ----------------------------------------------------------------------------------

  // Header, 4 bytes. h0: bit 0 restarted, bit 1 the store completes every write at once
  // (otherwise events do), bit 2 ticking clock, bits 3-4 stored StickyState, bits 5-7 stored
  // generation - 1. h1: bits 0-2 id block, bits 3-5 stored id counter, bits 6-7 age of the last
  // completed checkpoint. h2: the spec's policy (SpecFromByte). h3: bits 0-1 task count, bits
  // 2-3 start spread, bits 4-5 position_interval, bits 6-7 commit_timeout_ms (a commit phase on
  // half the inputs). Derived: the adaptive interval from bits 4-5 of h1 ^ h2. Derived: admission
  // caps on when bit 0 of h0 ^ h2 ^ h3 is set, a start slot when bit 7 of h1 ^ h3 is. Then events:
  // an opcode byte (mod 37, see Event()) and its argument bytes.
  void Setup() {
    const uint8_t h0 = in_.Byte(), h1 = in_.Byte(), h2 = in_.Byte(), h3 = in_.Byte();
    const bool restarted = h0 & 1;
    auto_store_ = h0 & 2;
    clock_.SetTicking(h0 & 4);

    static constexpr int64_t kBlocks[] = {100, 1, 2, 3, 4, 5, 10, 50};
    static constexpr int64_t kCounters[] = {0, 0, 1, 5, 99, 100, 150, 1000};
    static constexpr int64_t kAges[] = {-1, 0, 500, 50'000};
    CoordinatorOptions options;
    options.id_block = kBlocks[h1 & 7];
    options.missing_tasks_warn_interval = Millis(10'000);
    options.reserve_retry = Millis(1'000);
    options.savepoint_root = "/sp";
    static constexpr int64_t kSpreads[] = {0, -1, 50, 1000};  // -1: unset, the whole interval
    const int64_t spread = kSpreads[(h3 >> 2) & 3];
    if (spread >= 0) {
      options.start_spread = Millis(spread);
    } else {
      options.start_spread = std::nullopt;
    }

    if ((h0 ^ h2 ^ h3) & 1) {
      // A cap: every round asks first; the fuzzer answers (op 35) when and if it likes.
      options.admission = &admission_;
    }

    StoredPipeline stored;
    stored.id_counter = kCounters[(h1 >> 3) & 7];
    static constexpr int kTaskCounts[] = {3, 1, 2, 3};
    stored.record.spec = SpecFromByte(h2, kTaskCounts[h3 & 3]);
    stored.record.spec.position_interval = PositionIntervalFrom(h3 >> 4);
    static constexpr int64_t kCommitTimeouts[] = {0, 0, 50, 5'000};
    stored.record.spec.commit_timeout_ms = kCommitTimeouts[(h3 >> 6) & 3];
    // The adaptive interval on three inputs of four (bits 4-5 of h1 ^ h2): max_overhead,
    // max_interval_ms, or both.
    const int adaptive = ((h1 ^ h2) >> 4) & 3;
    if (adaptive & 1) stored.record.spec.max_overhead = 0.5;
    if (adaptive & 2) stored.record.spec.max_interval_ms = 4 * stored.record.spec.interval_ms;
    stored.record.generation = 1 + (h0 >> 5);
    stored.record.sticky = static_cast<StickyState>((h0 >> 3) & 3);
    stored.record.counters.completed_count = stored.id_counter > 0 ? 3 : 0;
    if (stored.id_counter > 0) {
      stored.record.last_completed_id = std::max<int64_t>(1, stored.id_counter - 1);
      const int64_t age = kAges[(h1 >> 6) & 3];
      if (age >= 0) stored.record.last_completed_at_ms = clock_.WallMs() - age;
    }

    c_.emplace(stored, clock_, options, [this](const std::string& message) { Fail(message); });
    c_->SetActionHook([this](const Action& action) {
      if (g_verbose) std::fprintf(stderr, "    -> %s\n", testing::DescribeAction(action).c_str());
      if (auto* a = std::get_if<ArmTimeout>(&action)) {
        timeout_ids_.push_back(a->checkpoint_id);
        if (timeout_ids_.size() > 8) timeout_ids_.erase(timeout_ids_.begin());
      }
    });
    if ((h1 ^ h3) & 0x80) c_->SetStartSlot(h2);  // else the key's fraction
    c_->Start(restarted);
  }

  // Positions on half the inputs: none, none, 10 or 100 a round.
  static int64_t PositionIntervalFrom(uint8_t bits) {
    static constexpr int64_t kPositionIntervals[] = {0, 0, 10, 100};
    return kPositionIntervals[bits & 3];
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
    const uint8_t op = in_.Byte() % 39;
    // After Delete the runtime drops every worker message, timer and id reservation and answers
    // operator calls with NOT_FOUND (runtime/pipeline_runner_internal.h); only the completion of a
    // commit handed to the store before the delete still arrives. Time still passes.
    const bool after_delete = op == 0 || op == 13 || op == 14 || op == 27 || op == 33;
    if (c_->deleted() && !after_delete) return;
    const auto& wakeup = c_->armed_wakeup();
    const auto& timeout = c_->armed_timeout();
    switch (op) {
      case 0: {  // time passes (timers do not fire by themselves)
        const uint8_t b = in_.Byte();
        const int64_t ms = b < 200 ? b : (b - 199) * 500;
        Trace("advance " + std::to_string(ms) + " ms");
        clock_.Advance(Millis(ms));
        break;
      }
      case 1:  // the wakeup timer fires if it is due
        if (wakeup && *wakeup <= clock_.Peek()) FireWakeup();
        break;
      case 2:  // time runs to the next timer, which fires
        RunToNextTimer();
        break;
      case 3:  // a stale or spurious wakeup (Asio may run a handler whose expiry was replaced)
        Trace("spurious wakeup");
        c_->OnWakeup();
        break;
      case 4:  // the timeout timer fires with the armed id, if due
        if (timeout && timeout->at <= clock_.Peek()) FireTimeout();
        break;
      case 5: {  // a timeout fires with a stale id
        const int64_t id = PickStaleTimeoutId(in_.Byte());
        if (timeout && timeout->checkpoint_id == id) break;  // not stale
        Trace("stale timeout " + std::to_string(id));
        c_->OnTimeout(id);
        break;
      }
      case 6: {
        const uint8_t flags = in_.Byte(), mask = in_.Byte();
        Register(flags, mask);
        break;
      }
      case 7: {
        const SessionId session = PickSession(in_.Byte());
        Trace("session " + std::to_string(session) + " ended");
        c_->OnSessionEnded(session, "fuzz");
        break;
      }
      case 8:
      case 9: {
        const uint8_t session = in_.Byte(), id = in_.Byte(), task = in_.Byte();
        AckOrDecline(op == 9, session, id, task);
        break;
      }
      case 10:  // every task acks the pending round from the stream that registered it
        AckAllOwned();
        break;
      case 11:
        if (c_->reserve_outstanding()) CompleteReserve(true);
        break;
      case 12:
        if (c_->reserve_outstanding()) CompleteReserve(false);
        break;
      case 13:
        if (c_->commit_outstanding()) CompleteCommit(true);
        break;
      case 14:
        if (c_->commit_outstanding()) CompleteCommit(false);
        break;
      case 15: WrongCommitReport(in_.Byte()); break;
      case 16:
        Trace("pause");
        c_->Pause();
        break;
      case 17:
        Trace("resume");
        c_->Resume();
        break;
      case 18: {
        const bool refused = in_.Byte() & 1;  // with admission: the cap is full, or not
        Trace(std::string("trigger now") + (refused ? " (admission refuses)" : ""));
        int64_t id = 0;
        c_->TriggerCheckpoint(&id, [refused](const AdmissionRequest&) {
          return refused ? Status::ResourceExhausted("admission.max_concurrent_rounds 1 is full")
                         : Status::Ok();
        });
        break;
      }
      case 36: {  // a stream's heartbeat says backlog, or caught up (a stream of any age)
        const uint8_t b = in_.Byte();
        Trace(std::string("backlog ") + ((b & 1) ? "on" : "off"));
        c_->OnBacklog(PickSession(b >> 1), b & 1);
        break;
      }
      case 37: {  // a task reports its restore: mostly a failure of the restore point
        const uint8_t session = in_.Byte(), id = in_.Byte(), task = in_.Byte();
        RestoreResult(session, id, task);
        break;
      }
      case 38:  // the store answers the fallback's read: the checkpoint, or not held
        RestoreCandidate(in_.Byte());
        break;
      case 35:  // the admission asked for comes (or a late answer to one left since)
        Trace("admitted");
        c_->OnAdmitted();
        break;
      case 19: RequestSavepoint(in_.Byte()); break;
      case 20: {
        const uint8_t mask = in_.Byte(), policy = in_.Byte();
        UpdateSpec(mask, policy);
        break;
      }
      case 21:
        Trace("delete");
        c_->Delete();
        break;
      case 22:
        Trace("begin shutdown");
        c_->BeginShutdown();
        break;
      case 23:
        Trace("persist failed");
        c_->OnPersistFailed(in_.Byte() & 1);
        break;
      case 25: {  // the store starts or stops taking writes (StoreHealth)
        const bool writable = (in_.Byte() & 1) != 0;
        Trace(std::string("store ") + (writable ? "writable" : "failing writes"));
        c_->OnStoreWritable(writable);
        break;
      }
      case 26: {  // an operator deletes a checkpoint (often one of the history)
        const int64_t id = PickCheckpointId(in_.Byte());
        Trace("delete checkpoint " + std::to_string(id));
        c_->DeleteCheckpoint(id);
        break;
      }
      case 28: {  // an operator restores the pipeline (a rollback, or another pipeline's)
        const uint8_t b = in_.Byte();
        CompletedCheckpoint checkpoint;
        checkpoint.checkpoint_id = std::max<int64_t>(1, PickCheckpointId(b));
        checkpoint.kind = CheckpointKind::kSavepoint;
        for (const std::string& task : kAllTasks) {
          // Sometimes without "d": a task set of its own (rescaled).
          if ((b >> 6) != 0 || task != "d") checkpoint.task_states[task] = {"s", 1, ""};
        }
        PipelineKey source = (b & 0x20) ? PipelineKey{"other", "p"} : c_->key();
        if (source == c_->key()) {
          // A rollback names one of its own history's checkpoints (the daemon reads it from the
          // store and pins it first): the one its restore point names now, if any.
          const RestorePoint current = c_->CurrentRestorePoint();
          if (current.checkpoint_id > 0 && current.source == c_->key()) {
            checkpoint.checkpoint_id = current.checkpoint_id;
          } else {
            source = PipelineKey{"other", "p"};
          }
        }
        Trace("restore from " + source.ToString() + "@" + std::to_string(checkpoint.checkpoint_id));
        c_->Restore(source, std::move(checkpoint));
        break;
      }
      case 27:  // the store finishes a delete, or fails it
        if (!c_->deletes_outstanding().empty()) CompleteDelete((in_.Byte() & 1) != 0);
        break;
      case 29: {  // a heartbeat reports positions
        const uint8_t session = in_.Byte(), task = in_.Byte(), value = in_.Byte();
        ReportPositions(session, task, value);
        break;
      }
      case 30: {  // the alignment group: join or leave, start a round, end one
        const uint8_t what = in_.Byte(), b = in_.Byte();
        GroupEvent(what, b);
        break;
      }
      case 31: {  // a task commits (mostly the COMMITTING checkpoint, from its stream)
        const uint8_t session = in_.Byte(), id = in_.Byte(), task = in_.Byte();
        Commit(session, id, task);
        break;
      }
      case 32:  // every task commits the COMMITTING checkpoint from its stream (and the group
                // agrees)
        CommitAllOwned(in_.Byte());
        break;
      case 33:  // the store answers the COMMITTED mark it holds, or another id
        MarkAnswer(in_.Byte());
        break;
      case 34: {  // a member hears that its group committed some round
        const int64_t id = PickCheckpointId(in_.Byte());
        if (member_) {
          Trace("group: round " + std::to_string(id) + " committed by every member");
          c_->OnGroupCommitted(id);
        }
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
    Trace("wakeup fires");
    c_->FireWakeup();
  }

  void FireTimeout() {
    const int64_t id = c_->armed_timeout()->checkpoint_id;
    Trace("timeout fires for " + std::to_string(id));
    c_->FireTimeout(id);
  }

  // Advances to the earlier timer and fires it; false when none is armed.
  bool RunToNextTimer() {
    const auto& wakeup = c_->armed_wakeup();
    const auto& timeout = c_->armed_timeout();
    if (!wakeup && !timeout) return false;
    const bool timeout_first = timeout && (!wakeup || timeout->at < *wakeup);
    clock_.AdvanceTo(timeout_first ? timeout->at : *wakeup);
    if (timeout_first) {
      FireTimeout();
    } else {
      FireWakeup();
    }
    return true;
  }

  int64_t PickStaleTimeoutId(uint8_t b) {
    if (!timeout_ids_.empty() && (b & 1)) return timeout_ids_[(b >> 1) % timeout_ids_.size()];
    return std::max<int64_t>(0, c_->last_trigger_id() + static_cast<int>(b >> 1) % 5 - 2);
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
    if (mask & 0x10) tasks.push_back("x");                           // not a task of the pipeline
    if ((mask & 0x20) && !tasks.empty()) tasks.push_back(tasks[0]);  // named twice
    if (mask & 0x40) tasks.push_back("");                            // invalid id
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
    c_->OnRegister(session, worker, tasks, takeover);
  }

  int64_t PickCheckpointId(uint8_t b) {
    const int64_t base = c_->open_round().value_or(c_->last_trigger_id());
    switch (b & 3) {
      case 0: return base;
      case 1: return base - 1 - (b >> 2) % 3;
      case 2: return base + 1 + (b >> 2) % 3;
      default: return (b >> 2) % 2 ? c_->last_trigger_id() : static_cast<int64_t>(b >> 2);
    }
  }

  // The open round's position, or (bit 6 of `b`) another: an ack there declines the round.
  int64_t AckPosition(uint8_t b) const {
    const auto pending = c_->Pending();
    const int64_t position = pending ? pending->position : 0;
    return (b & 0x40) ? position + 1 + (b & 0x3f) : position;
  }

  void ReportPositions(uint8_t session_byte, uint8_t task_byte, uint8_t value) {
    const std::string task = kAllTasks[task_byte % 4];
    auto owner = c_->owners().find(task);
    const SessionId session = (session_byte & 0x80) && owner != c_->owners().end()
                                  ? owner->second
                                  : PickSession(session_byte & 0x7f);
    // Mostly forward from the last restore point, now and then every task at once or a bad value.
    const int64_t base = c_->CurrentRestorePoint().position;
    std::vector<std::pair<std::string, int64_t>> positions;
    if (task_byte & 0x40) {
      for (const auto& t : c_->model_spec().task_ids) positions.emplace_back(t, base + value);
    } else {
      positions.emplace_back(task, (task_byte & 0x20) ? -int64_t{value} : base + value);
    }
    Trace("positions +" + std::to_string(value) + " session " + std::to_string(session));
    c_->OnPositions(session, positions);
  }

  // ---- the commit phase ----------------------------------------------------------------------

  // The COMMITTING checkpoint (or, bit 0, another id), for a task of the pipeline or not, from
  // its stream (or, bit 7, another).
  void Commit(uint8_t session_byte, uint8_t id_byte, uint8_t task_byte) {
    const std::string task = task_byte % 5 < 4 ? kAllTasks[task_byte % 5] : "x";
    auto owner = c_->owners().find(task);
    const SessionId session = (session_byte & 0x80) == 0 && owner != c_->owners().end()
                                  ? owner->second
                                  : PickSession(session_byte & 0x7f);
    const int64_t committing = c_->CommittingId();
    const int64_t id =
        (id_byte & 1) == 0 && committing > 0 ? committing : PickCheckpointId(id_byte);
    Trace("committed " + std::to_string(id) + " task " + task + " session " +
          std::to_string(session));
    c_->OnTaskCommitted(session, id, task);
  }

  void RestoreResult(uint8_t session_byte, uint8_t id_byte, uint8_t task_byte) {
    const std::string task = task_byte % 5 < 4 ? kAllTasks[task_byte % 5] : "x";
    auto owner = c_->owners().find(task);
    const SessionId session = (session_byte & 0x80) == 0 && owner != c_->owners().end()
                                  ? owner->second
                                  : PickSession(session_byte & 0x7f);
    const int64_t restore_point = c_->CurrentRestorePoint().checkpoint_id;
    const int64_t id =
        (id_byte & 1) == 0 && restore_point > 0 ? restore_point : PickCheckpointId(id_byte >> 1);
    const bool ok = (task_byte & 0x80) != 0;
    Trace("restore_result " + std::to_string(id) + " task " + task + " session " +
          std::to_string(session) + (ok ? " ok" : " failed"));
    c_->OnRestoreResult(session, id, task, ok, "fuzzed");
  }

  void RestoreCandidate(uint8_t b) {
    const auto& read = c_->restore_read_outstanding();
    // Mostly the read outstanding; sometimes a late or wrong answer (it must change nothing).
    const int64_t failed = read && (b & 1) == 0 ? read->failed_id : PickCheckpointId(b >> 2);
    const int64_t id = read && (b & 1) == 0 ? read->checkpoint_id : failed - 1;
    std::optional<CompletedCheckpoint> found;
    if ((b & 2) == 0) {
      found.emplace();
      found->checkpoint_id = id;
      for (const std::string& task : c_->spec().task_ids) {
        found->task_states[task] = TaskState{"mem://" + task, 1, "c"};
      }
    }
    Trace("restore candidate " + std::to_string(id) + " for " + std::to_string(failed) +
          (found ? "" : " (not held)"));
    c_->OnRestoreCandidate(failed, id, std::move(found));
  }

  void CommitAllOwned(uint8_t b) {
    const int64_t id = c_->CommittingId();
    if (id == 0) return;
    const auto owners = c_->owners();  // a copy: a call may end sessions
    for (const auto& [task, session] : owners) {
      Trace("committed " + std::to_string(id) + " task " + task);
      c_->OnTaskCommitted(session, id, task);
    }
    if (member_ && (b & 1)) {
      Trace("group: round " + std::to_string(id) + " committed by every member");
      c_->OnGroupCommitted(id);
    }
  }

  void MarkAnswer(uint8_t b) {
    const auto& held = c_->mark_outstanding();
    if (held && (b & 0x80) == 0) {
      const int64_t id = *held;
      Trace(std::string("store: COMMITTED mark of ") + std::to_string(id) +
            ((b & 1) ? " failed" : " durable"));
      if (b & 1) {
        c_->OnCommitMarkFailed(id, Status::Unavailable("fuzz: disk full"));
      } else {
        c_->OnCommitMarked(id);
      }
      return;
    }
    int64_t id = PickCheckpointId(b >> 1);
    if (held && id == *held) id += 1;
    Trace("store: wrong mark id " + std::to_string(id));
    if (b & 1) {
      c_->OnCommitMarkFailed(id, Status::Internal("fuzz"));
    } else {
      c_->OnCommitMarked(id);
    }
  }

  void AckOrDecline(bool decline, uint8_t session_byte, uint8_t id_byte, uint8_t task_byte) {
    const std::string task = task_byte % 5 < 4 ? kAllTasks[task_byte % 5] : "x";
    SessionId session;
    if (session_byte & 0x80) {
      auto it = c_->owners().find(task);
      session = it != c_->owners().end() ? it->second : PickSession(session_byte & 0x7f);
    } else {
      session = PickSession(session_byte);
    }
    const int64_t id = PickCheckpointId(id_byte);
    if (decline) {
      Trace("decline " + std::to_string(id) + " task " + task + " session " +
            std::to_string(session));
      c_->OnDecline(session, id, task, "fuzz", (task_byte & 0x80) != 0, AckPosition(task_byte));
    } else {
      Trace("ack " + std::to_string(id) + " task " + task + " session " + std::to_string(session));
      c_->OnAck(session, id, task, TaskState{"mem://" + task, 1, "c"}, {}, AckPosition(task_byte));
    }
  }

  void AckAllOwned() {
    const int64_t id = c_->open_round().value_or(c_->last_trigger_id());
    for (const auto& task : c_->model_spec().task_ids) {
      auto it = c_->owners().find(task);
      if (it == c_->owners().end()) continue;
      Trace("ack " + std::to_string(id) + " task " + task + " (owner)");
      c_->OnAck(it->second, id, task, TaskState{"mem://" + task, 1, "c"}, {}, AckPosition(0));
    }
  }

  void RequestSavepoint(uint8_t b) {
    static const std::string kTargets[] = {"", "s3://a", "s3://b", ""};
    static constexpr int64_t kTimeouts[] = {1, 50, 1000, 60'000};
    const std::string& target = kTargets[b & 3];
    const bool stop = b & 4;
    const Millis timeout(kTimeouts[(b >> 3) & 3]);
    Trace("savepoint target '" + target + "'" + (stop ? " stop" : ""));
    c_->RequestSavepoint(target, stop, timeout);
  }

  void UpdateSpec(uint8_t mask, uint8_t policy) {
    PipelineSpec spec = SpecFromByte(policy, 0);
    spec.position_interval = PositionIntervalFrom(mask >> 6);
    spec.commit_timeout_ms = c_->model_spec().commit_timeout_ms;  // kept: the setup chose it
    // The adaptive policy kept as the setup chose it, its cap following the new interval.
    spec.max_overhead = c_->model_spec().max_overhead;
    if (c_->model_spec().max_interval_ms > 0) spec.max_interval_ms = 4 * spec.interval_ms;
    for (int i = 0; i < 4; ++i) {
      if (mask & (1 << i)) spec.task_ids.push_back(kAllTasks[i]);
    }
    if (mask & 0x10) std::reverse(spec.task_ids.begin(), spec.task_ids.end());  // same set
    if (mask & 0x20) spec.key.pipeline_id = "other";  // the coordinator must refuse it
    if (!ValidateSpec(spec).ok()) return;             // the admin API validates first
    Trace("update spec tasks " + std::to_string(mask & 15));
    c_->UpdateSpec(spec);
  }

  // ---- the store ------------------------------------------------------------------------------

  void CompleteReserve(bool ok) {
    const int64_t counter = *c_->reserve_outstanding();
    if (ok) {
      Trace("store: ids reserved up to " + std::to_string(counter));
      c_->OnIdsReserved(counter);
    } else {
      Trace("store: id reservation failed");
      c_->OnIdsReserveFailed(Status::Internal("fuzz: disk full"));
    }
  }

  // The group's side (docs/ALIGNMENT.md), played by the fuzzer: membership, the group's rounds
  // (ids above everything the member used, as the group hands out), and their ends, also for
  // stale ids and for a member whose part is done.
  void GroupEvent(uint8_t what, uint8_t b) {
    switch (what % 4) {
      case 0:
        if (member_) {
          const int64_t floor = std::max(c_->last_trigger_id(), c_->IdFloor()) + (b & 7);
          Trace("leave the group (its ids above " + std::to_string(floor) + ")");
          member_ = false;
          c_->SetGroup(std::nullopt, floor);
        } else {
          AlignmentGroupSpec group;
          group.name = "ledger";
          group.timeout_ms = 1000;
          Trace("join the group");
          member_ = true;
          c_->SetGroup(group);
        }
        break;
      case 1: {
        if (!member_) break;
        const int64_t id = std::max(c_->last_trigger_id(), c_->IdFloor()) + 1 + (b & 3);
        static constexpr CheckpointKind kKinds[] = {
            CheckpointKind::kCheckpoint, CheckpointKind::kCheckpoint, CheckpointKind::kSavepoint,
            CheckpointKind::kSavepointAndStop};
        const int64_t position = (b & 0x10) ? 100 * (1 + (b >> 5)) : 0;
        Trace("group round " + std::to_string(id) + " starts");
        c_->StartGroupRound(id, kKinds[(b >> 2) & 3], position);
        break;
      }
      case 2:
      case 3: {
        if (!member_) break;
        static constexpr MemberOutcome kOutcomes[] = {
            MemberOutcome::kAborted, MemberOutcome::kFailed, MemberOutcome::kExpired,
            MemberOutcome::kStoreFailed};
        const auto& open = c_->open_round();
        const int64_t id = open && (b & 0x80) == 0 ? *open : PickCheckpointId(b);
        Trace("group round " + std::to_string(id) + " ends");
        c_->EndGroupRound(id, kOutcomes[b & 3], "fuzz");
        break;
      }
    }
  }

  void CompleteCommit(bool ok) {
    const int64_t id = *c_->commit_outstanding();
    if (ok) {
      Trace("store: checkpoint " + std::to_string(id) + " durable");
      c_->OnCommitted(id);
    } else if (member_) {
      // A member's commit is its group's: a failure comes back as the group's verdict.
      Trace("group: commit of " + std::to_string(id) + " failed");
      c_->EndGroupRound(id, MemberOutcome::kStoreFailed, "fuzz: the store failed the commit");
    } else {
      Trace("store: checkpoint " + std::to_string(id) + " failed");
      c_->OnCommitFailed(id, Status::Internal("fuzz"));
    }
  }

  void CompleteDelete(bool ok) {
    const int64_t id = *c_->deletes_outstanding().begin();
    Trace(std::string("store: delete of ") + std::to_string(id) + (ok ? " durable" : " failed"));
    if (ok) {
      c_->OnCheckpointsDeleted({id});
    } else {
      c_->OnCheckpointsDeleteFailed({id}, Status::Internal("fuzz"));
    }
  }

  // The store reports an id it was not handed (or no longer holds): must change nothing.
  void WrongCommitReport(uint8_t b) {
    int64_t id = PickCheckpointId(b >> 1);
    const auto& held = c_->commit_outstanding();
    if (held && id == *held) id += 1 + (b >> 7);
    if (b & 1) {
      Trace("store: wrong id " + std::to_string(id) + " reported durable");
      c_->OnCommitted(id);
    } else {
      Trace("store: wrong id " + std::to_string(id) + " reported failed");
      c_->OnCommitFailed(id, Status::Internal("fuzz"));
    }
  }

  // The store completes everything it holds, successfully (the runtime posts each completion
  // back to the strand after the current handler).
  void DrainStore() {
    while (!c_->deletes_outstanding().empty()) CompleteDelete(true);
    if (c_->deleted()) {  // only the completions of store writes still arrive (see Event)
      if (c_->commit_outstanding()) CompleteCommit(true);
      if (c_->mark_outstanding()) c_->OnCommitMarked(*c_->mark_outstanding());
      return;
    }
    for (int i = 0; c_->reserve_outstanding() || c_->commit_outstanding() || c_->mark_outstanding();
         ++i) {
      if (i >= 1000) Fail("store writes never settle: reservation/commit ping-pong");
      if (c_->reserve_outstanding()) {
        CompleteReserve(true);
      } else if (c_->commit_outstanding()) {
        CompleteCommit(true);
      } else {
        c_->OnCommitMarked(*c_->mark_outstanding());
      }
    }
  }

  void Trace(const std::string& what) {
    if (g_verbose) std::fprintf(stderr, "#%d %s\n", event_index_, what.c_str());
  }

  Input& in_;
  FuzzClock clock_;
  // A cap, so that the coordinator asks; the fuzzer itself answers (op 35), not this queue.
  RoundAdmission admission_{AdmissionCaps{1, 0}};
  std::optional<CheckedCoordinator> c_;
  bool auto_store_ = false;
  bool member_ = false;  // the coordinator is a member of an alignment group (GroupEvent)
  int event_index_ = -1;
  std::vector<int64_t> timeout_ids_;  // recent armed ids, for stale fires
  SessionId next_session_ = 1;
  std::vector<SessionId> sessions_;  // every session id handed out, oldest first
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
