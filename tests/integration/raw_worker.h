#pragma once
// RawWorker: one Connect stream driven message by message with gRPC's synchronous client, for
// protocol tests that need exact control (the SDK hides the protocol on purpose). A reader thread
// queues what the daemon sends; tests wait on it with deadlines.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "ckpt/v1/worker.grpc.pb.h"

namespace ckpt::testing {

using std::chrono::milliseconds;

class RawWorker {
 public:
  // `metadata`: sent with the call (an `authorization` header, say; twice if given twice).
  explicit RawWorker(std::shared_ptr<grpc::Channel> channel,
                     const std::vector<std::pair<std::string, std::string>>& metadata = {})
      : stub_(v1::WorkerService::NewStub(channel)) {
    for (const auto& [key, value] : metadata) context_.AddMetadata(key, value);
    stream_ = stub_->Connect(&context_);
    reader_ = std::thread([this] { ReadLoop(); });
  }
  ~RawWorker() {
    context_.TryCancel();
    reader_.join();
  }

  bool Write(const v1::WorkerMessage& m) { return stream_->Write(m); }

  bool Hello(const std::string& job, const std::string& pipeline,
             const std::vector<std::string>& tasks, bool takeover = false,
             const std::string& worker = "w") {
    v1::WorkerMessage m;
    auto* h = m.mutable_hello();
    h->set_worker_id(worker);
    h->set_job_id(job);
    h->set_pipeline_id(pipeline);
    for (const auto& t : tasks) h->add_task_ids(t);
    h->set_takeover(takeover);
    return Write(m);
  }

  bool Ack(int64_t id, const std::string& task) {
    v1::WorkerMessage m;
    m.mutable_ack()->set_checkpoint_id(id);
    m.mutable_ack()->set_task_id(task);
    m.mutable_ack()->mutable_state()->set_uri("mem://" + task + "/" + std::to_string(id));
    m.mutable_ack()->mutable_state()->set_size_bytes(42);
    return Write(m);
  }

  bool Decline(int64_t id, const std::string& task, const std::string& reason) {
    v1::WorkerMessage m;
    m.mutable_decline()->set_checkpoint_id(id);
    m.mutable_decline()->set_task_id(task);
    m.mutable_decline()->set_reason(reason);
    return Write(m);
  }

  bool SavepointRequest(const std::string& target, bool stop) {
    v1::WorkerMessage m;
    m.mutable_savepoint_request()->set_target(target);
    m.mutable_savepoint_request()->set_stop(stop);
    return Write(m);
  }

  void Cancel() { context_.TryCancel(); }

  // The next message matching `pred` (earlier non-matching ones are dropped), or nothing by the
  // deadline.
  std::optional<v1::CoordinatorMessage> WaitFor(
      std::function<bool(const v1::CoordinatorMessage&)> pred,
      milliseconds timeout = milliseconds(10000)) {
    std::unique_lock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      while (!inbox_.empty()) {
        auto m = std::move(inbox_.front());
        inbox_.pop_front();
        if (pred(m)) return m;
      }
      if (ended_) return std::nullopt;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && inbox_.empty()) {
        return std::nullopt;
      }
    }
  }
  std::optional<v1::CoordinatorMessage> WaitWelcome() {
    return WaitFor([](const auto& m) { return m.has_welcome(); });
  }
  std::optional<v1::CoordinatorMessage> WaitTrigger(milliseconds t = milliseconds(10000)) {
    return WaitFor([](const auto& m) { return m.has_trigger(); }, t);
  }
  std::optional<v1::CoordinatorMessage> WaitAbort(milliseconds t = milliseconds(10000)) {
    return WaitFor([](const auto& m) { return m.has_abort(); }, t);
  }
  std::optional<v1::CoordinatorMessage> WaitComplete(milliseconds t = milliseconds(10000)) {
    return WaitFor([](const auto& m) { return m.has_complete(); }, t);
  }

  // The stream's final status, once the daemon ended it (nothing by the deadline otherwise).
  std::optional<grpc::Status> WaitEnd(milliseconds timeout = milliseconds(10000)) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return ended_; })) return std::nullopt;
    return status_;
  }

 private:
  void ReadLoop() {
    v1::CoordinatorMessage m;
    while (stream_->Read(&m)) {
      std::lock_guard lock(mu_);
      inbox_.push_back(m);
      cv_.notify_all();
    }
    grpc::Status status = stream_->Finish();
    std::lock_guard lock(mu_);
    status_ = status;
    ended_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::CoordinatorMessage> inbox_;
  bool ended_ = false;
  grpc::Status status_;
};

}  // namespace ckpt::testing
