#pragma once
// InstantAckSink: a worker session that acknowledges every trigger at once, for all of its tasks,
// in process (no gRPC). Each ack goes through PipelineRunner::Ack, i.e. is posted to the
// pipeline's strand as a message from a real session would be.
//
// Threading: Send and End are called on the pipeline's strand (as SessionSink allows any thread);
// they only post. Holds the runner weakly: the runner holds its sinks, and a strong reference back
// would keep both alive forever. The task ids are shared (every session of a benchmark names the
// same ones): the sink stands in for a worker's stream, whose memory is not the daemon's, and
// keeps out of the per-pipeline figures what it can.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/pipeline_runner.h"
#include "runtime/session_sink.h"

namespace ckpt::bench {

class InstantAckSink final : public SessionSink {
 public:
  // `first_trigger_us` (optional): set once, to the first trigger's time in microseconds after
  // `since`.
  InstantAckSink(std::weak_ptr<PipelineRunner> runner, SessionId session,
                 std::shared_ptr<const std::vector<std::string>> task_ids,
                 std::atomic<int64_t>* first_trigger_us = nullptr,
                 std::chrono::steady_clock::time_point since = {})
      : runner_(std::move(runner)),
        session_(session),
        task_ids_(std::move(task_ids)),
        first_trigger_us_(first_trigger_us),
        since_(since) {}

  void Send(OutboundMessage message) override {
    const auto* trigger = std::get_if<SendTrigger>(&message);
    if (!trigger) return;  // welcome, complete, abort: nothing to answer
    if (first_trigger_us_ && first_trigger_us_->load(std::memory_order_relaxed) == 0) {
      const auto after = std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now() - since_);
      first_trigger_us_->store(std::max<int64_t>(1, after.count()), std::memory_order_relaxed);
    }
    auto runner = runner_.lock();
    if (!runner) return;
    for (const std::string& task : *task_ids_) {
      // A short state, as a real worker's ack carries a URI.
      runner->Ack(session_, trigger->checkpoint_id, task,
                  TaskState{"mem://chk-" + std::to_string(trigger->checkpoint_id), 0, ""});
    }
  }
  void End(Status) override {}

 private:
  const std::weak_ptr<PipelineRunner> runner_;
  const SessionId session_;
  const std::shared_ptr<const std::vector<std::string>> task_ids_;
  std::atomic<int64_t>* const first_trigger_us_;  // the pipeline's strand writes it, once
  const std::chrono::steady_clock::time_point since_;
};

}  // namespace ckpt::bench
