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
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
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
  // `ack_delay` on `delay_io` (optional): the acks come that long after the trigger, as from a
  // worker whose snapshot takes that long (a round is then in flight for that long).
  InstantAckSink(std::weak_ptr<PipelineRunner> runner, SessionId session,
                 std::shared_ptr<const std::vector<std::string>> task_ids,
                 std::atomic<int64_t>* first_trigger_us = nullptr,
                 std::chrono::steady_clock::time_point since = {},
                 boost::asio::io_context* delay_io = nullptr,
                 std::chrono::milliseconds ack_delay = {})
      : runner_(std::move(runner)),
        session_(session),
        task_ids_(std::move(task_ids)),
        first_trigger_us_(first_trigger_us),
        since_(since),
        delay_io_(delay_io),
        ack_delay_(ack_delay) {}

  void Send(OutboundMessage message) override {
    const auto* trigger = std::get_if<SendTrigger>(&message);
    if (!trigger) return;  // welcome, complete, abort: nothing to answer
    if (first_trigger_us_ && first_trigger_us_->load(std::memory_order_relaxed) == 0) {
      const auto after = std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now() - since_);
      first_trigger_us_->store(std::max<int64_t>(1, after.count()), std::memory_order_relaxed);
    }
    if (delay_io_) {
      auto timer = std::make_shared<boost::asio::steady_timer>(*delay_io_, ack_delay_);
      timer->async_wait([timer, runner = runner_, session = session_, tasks = task_ids_,
                         id = trigger->checkpoint_id](const boost::system::error_code&) {
        AckAll(runner, session, *tasks, id);
      });
      return;
    }
    AckAll(runner_, session_, *task_ids_, trigger->checkpoint_id);
  }
  void End(Status) override {}

 private:
  static void AckAll(const std::weak_ptr<PipelineRunner>& weak, SessionId session,
                     const std::vector<std::string>& tasks, int64_t checkpoint_id) {
    auto runner = weak.lock();
    if (!runner) return;
    for (const std::string& task : tasks) {
      // A short state, as a real worker's ack carries a URI; 1 MiB a task, for admission's bytes.
      runner->Ack(session, checkpoint_id, task,
                  TaskState{"mem://chk-" + std::to_string(checkpoint_id), 1 << 20, ""});
    }
  }

  const std::weak_ptr<PipelineRunner> runner_;
  const SessionId session_;
  const std::shared_ptr<const std::vector<std::string>> task_ids_;
  std::atomic<int64_t>* const first_trigger_us_;  // the pipeline's strand writes it, once
  const std::chrono::steady_clock::time_point since_;
  boost::asio::io_context* const delay_io_;  // null: acks at once
  const std::chrono::milliseconds ack_delay_;
};

}  // namespace ckpt::bench
