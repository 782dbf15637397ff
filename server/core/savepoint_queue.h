#pragma once
// SavepointQueue: the savepoint a pipeline was asked for and has not started yet, and the rate of
// its workers' requests (docs/PROTOCOL.md, "Savepoint requests"). One savepoint waits at a time: a
// request that agrees with it (stop and target as asked) joins it, any other is refused. It
// waits until the pipeline can start it (then Take) or until its deadline, which counts from the
// request. Operators' calls may leave; a worker's request waits until its deadline.
//
// The coordinator decides when a savepoint may start and what a refusal says; this part holds
// what waits and counts the workers' requests.
//
// One of the coordinator's parts (docs/DESIGN.md, "The coordinator's parts").
// Threading: owned by one PipelineCoordinator, so used on its pipeline's strand only. No I/O.
//
// Memory: one pointer in a pipeline that never had a savepoint asked for; the queue and the
// request times are made on first use (32 bytes, and the request while one waits).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/clock.h"
#include "core/types.h"

namespace ckpt {

class SavepointQueue {
 public:
  struct Request {
    std::string target;  // as asked; empty: the default location
    bool stop = false;
    SteadyTime deadline;
    bool worker_asked = false;  // a worker's request waits for it: callers leaving do not drop it
    CheckpointKind kind() const {
      return stop ? CheckpointKind::kSavepointAndStop : CheckpointKind::kSavepoint;
    }
  };

  // The savepoint waiting, or null.
  const Request* queued() const { return state_ ? state_->queued.get() : nullptr; }

  enum class Offered {
    kQueued,   // nothing was waiting: this request waits now
    kJoined,   // the same savepoint was waiting: one savepoint answers both
    kDiffers,  // a different one is waiting: refused
  };
  Offered Offer(Request request);
  // The waiting savepoint leaves the queue (it starts, fails or is dropped).
  std::optional<Request> Take();
  // Every operator call that waited went away: the savepoint is dropped unless a worker asked for
  // it too. True when it was dropped.
  bool DropIfNoWorkerWaits();

  // A worker's target is empty or under `job_root`: a worker of one job must not write where
  // another job's savepoints go (nor read them back as its restore point).
  static Status CheckWorkerTarget(const std::string& target, const std::string& job_root);
  // At most `per_minute` worker requests accepted in the minute before `now`; an accepted
  // request counts. RESOURCE_EXHAUSTED (a limit) beyond it.
  Status AdmitWorkerRequest(SteadyTime now, int64_t per_minute);

 private:
  struct State {
    std::unique_ptr<Request> queued;  // null: none (a pointer: most pipelines never queue one)
    // When the worker requests of the last minute were accepted, oldest first: at most
    // per_minute entries. A vector, not a deque: libstdc++'s deque allocates ~600 bytes even
    // when empty.
    std::vector<SteadyTime> worker_times;
  };
  State& state();
  std::unique_ptr<State> state_;
};

}  // namespace ckpt
