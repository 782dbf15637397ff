// The SDK's heartbeats, against a stand-in daemon that records what arrives and when: a quiet
// stream heartbeats every interval; a stream that sends acks does not (every message renews the
// lease) and heartbeats again once it is quiet; with positions in use every heartbeat goes out,
// since the positions ride on it.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <ckpt/worker.h>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ckpt/v1/worker.grpc.pb.h"
#include "support/eventually.h"

namespace ckpt::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Welcomes every stream with `heartbeat_interval` and records each message after the hello.
// Threading: the service runs on gRPC's sync threads; the accessors lock.
class RecordingDaemon final : public v1::WorkerService::Service {
 public:
  struct Arrival {
    v1::WorkerMessage::MsgCase kind;
    Clock::time_point at;
    bool backlog = false;  // a heartbeat's
  };

  explicit RecordingDaemon(milliseconds heartbeat_interval)
      : heartbeat_interval_(heartbeat_interval) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~RecordingDaemon() override {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  std::vector<Arrival> arrivals() const {
    std::lock_guard<std::mutex> lock(mu_);
    return arrivals_;
  }
  // Heartbeats that arrived in [from, to).
  int HeartbeatsBetween(Clock::time_point from, Clock::time_point to) const {
    int n = 0;
    for (const Arrival& a : arrivals()) {
      n += a.kind == v1::WorkerMessage::kHeartbeat && a.at >= from && a.at < to;
    }
    return n;
  }
  // The backlog flag of every heartbeat that arrived, in order.
  std::vector<bool> HeartbeatBacklogs() const {
    std::vector<bool> flags;
    for (const Arrival& a : arrivals()) {
      if (a.kind == v1::WorkerMessage::kHeartbeat) flags.push_back(a.backlog);
    }
    return flags;
  }
  // The arrival time of the first and of the last ack (nullopt: none yet).
  std::optional<std::pair<Clock::time_point, Clock::time_point>> AckSpan() const {
    std::optional<std::pair<Clock::time_point, Clock::time_point>> span;
    for (const Arrival& a : arrivals()) {
      if (a.kind != v1::WorkerMessage::kAck) continue;
      if (!span) span.emplace(a.at, a.at);
      span->second = a.at;
    }
    return span;
  }

  grpc::Status Connect(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override {
    v1::WorkerMessage message;
    if (!stream->Read(&message) || !message.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "hello first");
    }
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_session_id("s");
    welcome.mutable_welcome()->set_heartbeat_interval_ms(heartbeat_interval_.count());
    stream->Write(welcome);
    while (stream->Read(&message)) {
      std::lock_guard<std::mutex> lock(mu_);
      arrivals_.push_back({message.msg_case(), Clock::now(),
                           message.has_heartbeat() && message.heartbeat().backlog()});
    }
    return grpc::Status::OK;
  }

 private:
  const milliseconds heartbeat_interval_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::vector<Arrival> arrivals_;  // guarded by mu_
};

class SdkHeartbeatTest : public ::testing::Test {
 protected:
  static constexpr milliseconds kInterval{200};

  void Connect() {
    worker_ = runtime_.AddPipeline(
        {.worker_id = "w", .job_id = "job", .pipeline_id = "p", .task_ids = {"0"}}, {});
    worker_->Start();
    ASSERT_TRUE(Eventually([&] { return worker_->IsConnected(); }));
  }
  // Acks every 20 ms for 2 s: ten heartbeat intervals with a message every tenth of one.
  void AckForTwoSeconds() {
    for (int i = 1; i <= 100; ++i) {
      worker_->Ack(i, "0", {"mem://0/" + std::to_string(i), 1, ""});
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_TRUE(Eventually([&] {
      int acks = 0;
      for (const auto& a : daemon_.arrivals()) acks += a.kind == v1::WorkerMessage::kAck;
      return acks == 100;
    }));
  }

  RecordingDaemon daemon_{kInterval};
  sdk::WorkerRuntime runtime_{daemon_.address()};
  std::shared_ptr<sdk::PipelineWorker> worker_;
};

TEST_F(SdkHeartbeatTest, AQuietStreamHeartbeatsEveryInterval) {
  Connect();
  const Clock::time_point from = Clock::now();
  ASSERT_TRUE(Eventually([&] { return daemon_.HeartbeatsBetween(from, Clock::now()) >= 5; }))
      << "a stream with nothing else to say keeps its lease with heartbeats";
}

TEST_F(SdkHeartbeatTest, AcksTakeTheHeartbeatsPlaceAndHeartbeatsComeBackWhenQuiet) {
  Connect();
  AckForTwoSeconds();
  const auto ack_span = daemon_.AckSpan();
  ASSERT_TRUE(ack_span.has_value());
  // Not a structured binding: the lambda below captures the end (clang refuses bindings there).
  const Clock::time_point first_ack = ack_span->first;
  const Clock::time_point last_ack = ack_span->second;
  // Ten intervals passed; sending every heartbeat would have made ten.
  EXPECT_LE(daemon_.HeartbeatsBetween(first_ack, last_ack), 2)
      << "acks renew the lease: a heartbeat between them says nothing new";
  ASSERT_TRUE(Eventually([&] { return daemon_.HeartbeatsBetween(last_ack, Clock::now()) >= 3; }))
      << "once the acks stop, the heartbeats keep the lease";
}

TEST_F(SdkHeartbeatTest, WithPositionsInUseEveryHeartbeatGoesOut) {
  Connect();
  worker_->SetPosition("0", 5);
  AckForTwoSeconds();
  const auto ack_span = daemon_.AckSpan();
  ASSERT_TRUE(ack_span.has_value());
  EXPECT_GE(daemon_.HeartbeatsBetween(ack_span->first, ack_span->second), 5)
      << "positions ride on heartbeats: they go out every interval, acks or not";
}

TEST_F(SdkHeartbeatTest, ABacklogGoesOutAtOnceAndRidesOnEveryHeartbeat) {
  Connect();
  worker_->SetBacklog(true);
  ASSERT_TRUE(Eventually([&] {
    const std::vector<bool> flags = daemon_.HeartbeatBacklogs();
    return !flags.empty() && flags.back();
  })) << "SetBacklog(true) goes out in a heartbeat";
  const size_t said = daemon_.HeartbeatBacklogs().size();
  ASSERT_TRUE(Eventually([&] { return daemon_.HeartbeatBacklogs().size() >= said + 3; }));
  for (size_t i = said; i < daemon_.HeartbeatBacklogs().size(); ++i) {
    EXPECT_TRUE(daemon_.HeartbeatBacklogs()[i]) << "heartbeat " << i << " dropped the backlog";
  }
  worker_->SetBacklog(false);
  ASSERT_TRUE(Eventually([&] { return !daemon_.HeartbeatBacklogs().back(); }))
      << "caught up: said too";
}

}  // namespace
}  // namespace ckpt::testing
