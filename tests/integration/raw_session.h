#pragma once
// RawSession: one WorkerService.Session call driven envelope by envelope with gRPC's synchronous
// client, for protocol tests that need exact control of channels and frames. A reader thread
// keeps what the daemon sends per channel (and how many frames it came in); tests wait on it with
// deadlines.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "ckpt/v1/worker.grpc.pb.h"

namespace ckpt::testing {

class RawSession {
 public:
  using milliseconds = std::chrono::milliseconds;

  // `read`: false for a worker that never reads what the daemon sends.
  explicit RawSession(std::shared_ptr<grpc::Channel> channel, bool read = true)
      : stub_(v1::WorkerService::NewStub(channel)) {
    stream_ = stub_->Session(&context_);
    if (read) reader_ = std::thread([this] { ReadLoop(); });
  }
  ~RawSession() {
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
  }

  // One frame of (channel, message) envelopes.
  bool WriteFrame(const std::vector<std::pair<uint32_t, v1::WorkerMessage>>& envelopes) {
    v1::WorkerFrame frame;
    for (const auto& [channel, message] : envelopes) {
      auto* envelope = frame.add_envelopes();
      envelope->set_channel(channel);
      *envelope->mutable_message() = message;
    }
    return stream_->Write(frame);
  }
  bool Write(uint32_t channel, const v1::WorkerMessage& message) {
    return WriteFrame({{channel, message}});
  }

  static v1::WorkerMessage HelloMessage(const std::string& job, const std::string& pipeline,
                                        const std::vector<std::string>& tasks,
                                        bool takeover = false) {
    v1::WorkerMessage m;
    auto* h = m.mutable_hello();
    h->set_worker_id("w");
    h->set_job_id(job);
    h->set_pipeline_id(pipeline);
    for (const auto& t : tasks) h->add_task_ids(t);
    h->set_takeover(takeover);
    return m;
  }
  static v1::WorkerMessage AckMessage(int64_t id, const std::string& task) {
    v1::WorkerMessage m;
    m.mutable_ack()->set_checkpoint_id(id);
    m.mutable_ack()->set_task_id(task);
    m.mutable_ack()->mutable_state()->set_uri("mem://" + task + "/" + std::to_string(id));
    return m;
  }
  bool Hello(uint32_t channel, const std::string& job, const std::string& pipeline,
             const std::vector<std::string>& tasks, bool takeover = false) {
    return Write(channel, HelloMessage(job, pipeline, tasks, takeover));
  }
  bool Ack(uint32_t channel, int64_t id, const std::string& task) {
    return Write(channel, AckMessage(id, task));
  }
  bool Goodbye(uint32_t channel) {
    v1::WorkerMessage m;
    m.mutable_goodbye();
    return Write(channel, m);
  }
  bool Heartbeat(uint32_t channel) {
    v1::WorkerMessage m;
    m.mutable_heartbeat();
    return Write(channel, m);
  }

  // The next message on `channel` matching `pred` (earlier ones on it are dropped), or nothing by
  // the deadline or once the channel or the call ended.
  std::optional<v1::CoordinatorMessage> WaitFor(
      uint32_t channel, std::function<bool(const v1::CoordinatorMessage&)> pred,
      milliseconds timeout = milliseconds(10000)) {
    std::unique_lock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto& inbox = inboxes_[channel];
      while (!inbox.empty()) {
        auto m = std::move(inbox.front());
        inbox.pop_front();
        if (pred(m)) return m;
      }
      if (call_ended_ || ends_.count(channel)) return std::nullopt;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && inbox.empty()) {
        return std::nullopt;
      }
    }
  }
  std::optional<v1::CoordinatorMessage> WaitWelcome(uint32_t channel) {
    return WaitFor(channel, [](const auto& m) { return m.has_welcome(); });
  }
  std::optional<v1::CoordinatorMessage> WaitTrigger(uint32_t channel,
                                                    milliseconds t = milliseconds(10000)) {
    return WaitFor(
        channel, [](const auto& m) { return m.has_trigger(); }, t);
  }
  std::optional<v1::CoordinatorMessage> WaitComplete(uint32_t channel,
                                                     milliseconds t = milliseconds(10000)) {
    return WaitFor(
        channel, [](const auto& m) { return m.has_complete(); }, t);
  }

  // The `end` of `channel` (taken out: a reused number may end again), or nothing by the
  // deadline.
  std::optional<v1::ChannelEnd> WaitChannelEnd(uint32_t channel,
                                               milliseconds timeout = milliseconds(10000)) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return ends_.count(channel) > 0 || call_ended_; })) {
      return std::nullopt;
    }
    auto it = ends_.find(channel);
    if (it == ends_.end()) return std::nullopt;
    v1::ChannelEnd end = it->second;
    ends_.erase(it);
    inboxes_.erase(channel);
    return end;
  }

  // The call's final status, once the daemon ended it.
  std::optional<grpc::Status> WaitCallEnd(milliseconds timeout = milliseconds(10000)) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return call_ended_; })) return std::nullopt;
    return status_;
  }

  // Frames and envelopes read so far.
  std::pair<int64_t, int64_t> FramesAndEnvelopes() {
    std::lock_guard lock(mu_);
    return {frames_, envelopes_};
  }

 private:
  void ReadLoop() {
    v1::CoordinatorFrame frame;
    while (stream_->Read(&frame)) {
      std::lock_guard lock(mu_);
      ++frames_;
      for (auto& envelope : *frame.mutable_envelopes()) {
        ++envelopes_;
        if (envelope.has_end()) {
          ends_[envelope.channel()] = envelope.end();
        } else {
          inboxes_[envelope.channel()].push_back(std::move(*envelope.mutable_message()));
        }
      }
      cv_.notify_all();
    }
    grpc::Status status = stream_->Finish();
    std::lock_guard lock(mu_);
    status_ = status;
    call_ended_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerFrame, v1::CoordinatorFrame>> stream_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::deque<v1::CoordinatorMessage>> inboxes_;
  std::map<uint32_t, v1::ChannelEnd> ends_;
  int64_t frames_ = 0;
  int64_t envelopes_ = 0;
  bool call_ended_ = false;
  grpc::Status status_;
};

}  // namespace ckpt::testing
