// WorkerService.Session against a real daemon: channels as Connect streams, their ends, the
// call's lease and hello timeout, limits counted per channel, batching of what the daemon writes.
#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "raw_session.h"
#include "raw_worker.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

class SessionProtocolTest : public DaemonTest {};

// Completes one round of `pipeline` (tasks a and b) on `channel`.
void CompleteARound(RawSession& s, uint32_t channel) {
  auto trigger = s.WaitTrigger(channel);
  ASSERT_TRUE(trigger) << "channel " << channel;
  const int64_t id = trigger->trigger().checkpoint_id();
  s.WriteFrame(
      {{channel, RawSession::AckMessage(id, "a")}, {channel, RawSession::AckMessage(id, "b")}});
  auto complete = s.WaitComplete(channel);
  ASSERT_TRUE(complete) << "channel " << channel;
  EXPECT_EQ(complete->complete().checkpoint_id(), id);
}

TEST_F(SessionProtocolTest, EachChannelIsAPipelinesStream) {
  config_.pipelines = {TestSpec("p", {"a", "b"}), TestSpec("q", {"a", "b"})};
  StartDaemon();
  RawSession s(channel_);
  // Both hellos in one frame: two channels, two pipelines, one call.
  s.WriteFrame({{1, RawSession::HelloMessage("job", "p", {"a", "b"})},
                {7, RawSession::HelloMessage("job", "q", {"a", "b"})}});
  auto welcome_p = s.WaitWelcome(1);
  auto welcome_q = s.WaitWelcome(7);
  ASSERT_TRUE(welcome_p && welcome_q);
  EXPECT_EQ(welcome_p->welcome().lease_ttl_ms(), 3000);
  EXPECT_NE(welcome_p->welcome().session_id(), welcome_q->welcome().session_id());
  EXPECT_EQ(daemon_->metrics().worker_sessions.load(), 2) << "each channel is a stream";
  EXPECT_EQ(daemon_->metrics().session_calls.load(), 1);
  CompleteARound(s, 1);
  CompleteARound(s, 7);
  // Durable in the store, as over Connect.
  auto history = daemon_->store().ListCompleted({"job", "q"}, 0);
  ASSERT_TRUE(history.ok());
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->front().task_states.at("b").uri,
            "mem://b/" + std::to_string(history->front().checkpoint_id));
}

TEST_F(SessionProtocolTest, ChannelErrorsEndOnlyTheirChannelWithTheirCodes) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  RawSession s(channel_);
  s.Hello(1, "job", "p", {"a", "b"});
  ASSERT_TRUE(s.WaitWelcome(1));
  struct Case {
    std::string name;
    v1::WorkerMessage hello;
    grpc::StatusCode expected;
  };
  const std::vector<Case> cases = {
      {"unknown pipeline", RawSession::HelloMessage("job", "nope", {"a"}),
       grpc::StatusCode::NOT_FOUND},
      {"task not in pipeline", RawSession::HelloMessage("job", "p", {"zz"}),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"empty job id", RawSession::HelloMessage("", "p", {"a"}),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"tasks held by channel 1", RawSession::HelloMessage("job", "p", {"a"}),
       grpc::StatusCode::ALREADY_EXISTS},
  };
  uint32_t number = 10;
  for (const auto& c : cases) {
    s.Write(number, c.hello);
    auto end = s.WaitChannelEnd(number);
    ASSERT_TRUE(end) << c.name << ": channel not ended";
    EXPECT_EQ(end->code(), static_cast<int>(c.expected)) << c.name << ": " << end->message();
    EXPECT_FALSE(end->message().empty()) << c.name;
    ++number;
  }
  // A hello on a channel in use ends that channel, INVALID_ARGUMENT; the pipeline's tasks go.
  s.Hello(1, "job", "p", {"a", "b"});
  auto end = s.WaitChannelEnd(1);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT)) << end->message();
  EXPECT_TRUE(Eventually([&] { return Describe("p").state == PipelineState::kWaitingForTasks; }));
  // The call went on through all of it: the number is free again, and serves.
  s.Hello(1, "job", "p", {"a", "b"});
  ASSERT_TRUE(s.WaitWelcome(1));
  CompleteARound(s, 1);
  EXPECT_FALSE(s.WaitCallEnd(milliseconds(0)));
}

TEST_F(SessionProtocolTest, GoodbyeEndsAChannelWithOkAndItsNumberServesAgain) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  RawSession s(channel_);
  s.Hello(3, "job", "p", {"a", "b"});
  ASSERT_TRUE(s.WaitWelcome(3));
  s.Goodbye(3);
  auto end = s.WaitChannelEnd(3);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->code(), 0);
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
  EXPECT_EQ(daemon_->metrics().session_calls.load(), 1) << "the call goes on";
  s.Hello(3, "job", "p", {"a", "b"});
  ASSERT_TRUE(s.WaitWelcome(3));
  CompleteARound(s, 3);
}

TEST_F(SessionProtocolTest, EnvelopesOnAChannelNotInUseAreIgnoredAndCounted) {
  config_.pipelines = {TestSpec("p", {"a", "b"})};
  StartDaemon();
  RawSession s(channel_);
  s.Hello(1, "job", "p", {"a", "b"});
  ASSERT_TRUE(s.WaitWelcome(1));
  s.WriteFrame({{2, RawSession::AckMessage(1, "a")}, {0, RawSession::AckMessage(1, "a")}});
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().ignored_no_channel_total.load() == 2; }));
  EXPECT_FALSE(s.WaitChannelEnd(2, milliseconds(100)));
  CompleteARound(s, 1);
}

TEST_F(SessionProtocolTest, ACallThatOpensNoChannelEndsAfterTheHelloTimeout) {
  config_.lease_ttl_ms = 60000;
  config_.heartbeat_interval_ms = 20000;
  config_.hello_timeout_ms = 300;
  StartDaemon();
  RawSession s(channel_);
  s.Heartbeat(0);  // a frame, but no channel
  auto status = s.WaitCallEnd();
  ASSERT_TRUE(status) << "ended by the hello timeout, long before the lease (60 s)";
  EXPECT_EQ(status->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status->error_message().find("no channel opened within 300 ms"), std::string::npos)
      << status->error_message();
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().session_calls.load() == 0; }));
}

// The lease is a minute; the daemon's clock is moved instead of waiting for it.
TEST_F(SessionProtocolTest, AHeartbeatOnChannelZeroRenewsEveryChannelAndSilenceEndsTheCall) {
  config_.lease_ttl_ms = 60000;
  config_.heartbeat_interval_ms = 20000;
  config_.pipelines = {TestSpec("p", {"a"}, 3600000, 3600000),
                       TestSpec("q", {"a"}, 3600000, 3600000)};
  StartDaemon();
  RawSession s(channel_);
  s.WriteFrame({{1, RawSession::HelloMessage("job", "p", {"a"})},
                {2, RawSession::HelloMessage("job", "q", {"a"})}});
  ASSERT_TRUE(s.WaitWelcome(1) && s.WaitWelcome(2));
  const auto& m = daemon_->metrics();
  ASSERT_EQ(m.session_frames_read_total.load(), 1u);
  MoveDaemonClock(std::chrono::seconds(40));
  s.Heartbeat(0);
  ASSERT_TRUE(Eventually([&] { return m.session_frames_read_total.load() == 2; }));
  MoveDaemonClock(std::chrono::seconds(40));  // 80 s since the hellos, 40 since the beat
  EXPECT_FALSE(s.WaitCallEnd(milliseconds(300))) << "the heartbeat on channel 0 renewed it";
  EXPECT_EQ(Describe("q").state, PipelineState::kRunning);
  MoveDaemonClock(std::chrono::seconds(30));  // 70 s of silence
  auto status = s.WaitCallEnd(milliseconds(5000));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(Eventually([&] {
    return Describe("p").state == PipelineState::kWaitingForTasks &&
           Describe("q").state == PipelineState::kWaitingForTasks;
  }));
  EXPECT_TRUE(Eventually([&] { return daemon_->metrics().worker_sessions.load() == 0; }));
}

TEST_F(SessionProtocolTest, StreamLimitsCountChannelsNotTheCall) {
  config_.limits.max_streams_per_peer = 2;
  config_.pipelines = {TestSpec("p", {"a"}), TestSpec("q", {"a"}), TestSpec("r", {"a"})};
  StartDaemon();
  RawSession s(channel_);
  s.WriteFrame({{1, RawSession::HelloMessage("job", "p", {"a"})},
                {2, RawSession::HelloMessage("job", "q", {"a"})},
                {3, RawSession::HelloMessage("job", "r", {"a"})}});
  ASSERT_TRUE(s.WaitWelcome(1) && s.WaitWelcome(2));
  auto end = s.WaitChannelEnd(3);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_NE(end->message().find("max_streams_per_peer"), std::string::npos) << end->message();
  // A Connect stream from the same peer counts with them.
  RawWorker w(channel_);
  w.Hello("job", "r", {"a"});
  auto status = w.WaitEnd();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A channel's end gives its slot back.
  s.Goodbye(2);
  ASSERT_TRUE(s.WaitChannelEnd(2));
  s.Hello(3, "job", "r", {"a"});
  EXPECT_TRUE(s.WaitWelcome(3));
}

TEST_F(SessionProtocolTest, ASessionWhoseWorkerNeverReadsEndsAtItsQueueLimit) {
  config_.limits.max_session_queue_bytes = 64 << 10;
  config_.lease_ttl_ms = 600000;  // the queue, not the lease, ends it
  config_.heartbeat_interval_ms = 200000;
  // Rounds that expire every 20 ms: a trigger and an abort each time, for a worker that reads
  // none of them.
  std::vector<std::pair<uint32_t, v1::WorkerMessage>> hellos;
  for (int i = 0; i < 200; ++i) {
    const std::string name = "p" + std::to_string(i);
    PipelineSpec spec = TestSpec(name, {"a"}, /*interval_ms=*/10, /*timeout_ms=*/20);
    spec.tolerable_failures = 1000000;
    config_.pipelines.push_back(spec);
    hellos.push_back({static_cast<uint32_t>(i + 1), RawSession::HelloMessage("job", name, {"a"})});
  }
  StartDaemon();
  RawSession s(channel_, /*read=*/false);
  s.WriteFrame(hellos);
  const auto& m = daemon_->metrics();
  ASSERT_TRUE(Eventually([&] { return m.session_calls.load() == 1; }));
  EXPECT_TRUE(Eventually(
      [&] {
        return m.limit_refusals_total[static_cast<size_t>(CountedLimit::kMaxSessionQueueBytes)]
                       .load() == 1 &&
               m.session_calls.load() == 0;
      },
      milliseconds(60000)))
      << "the call ended at max_session_queue_bytes, once";
  EXPECT_TRUE(Eventually([&] { return m.worker_sessions.load() == 0; }));
  EXPECT_TRUE(Eventually([&] { return Describe("p0").state == PipelineState::kWaitingForTasks; }));
}

TEST_F(SessionProtocolTest, WhatBecomesReadyWhileAFrameIsWrittenGoesInTheNextFrame) {
  // 200 pipelines on one call, every 20 ms: their triggers come from two io threads at once (no
  // start spread: the spread would set them apart evenly, as it should, and leave the frames thin).
  config_.start_spread_ms = 0;
  std::vector<std::pair<uint32_t, v1::WorkerMessage>> hellos;
  for (int i = 0; i < 200; ++i) {
    const std::string name = "p" + std::to_string(i);
    config_.pipelines.push_back(TestSpec(name, {"a"}, /*interval_ms=*/20));
    hellos.push_back({static_cast<uint32_t>(i + 1), RawSession::HelloMessage("job", name, {"a"})});
  }
  StartDaemon();
  RawSession s(channel_);
  s.WriteFrame(hellos);
  for (uint32_t channel = 1; channel <= 200; ++channel) {
    ASSERT_TRUE(s.WaitWelcome(channel)) << channel;
  }
  const auto& m = daemon_->metrics();
  EXPECT_TRUE(Eventually([&] {
    return m.session_envelopes_written_total.load() > 2 * m.session_frames_written_total.load();
  })) << m.session_envelopes_written_total.load()
      << " envelopes in " << m.session_frames_written_total.load() << " frames";
  auto [frames, envelopes] = s.FramesAndEnvelopes();
  EXPECT_GT(envelopes, frames) << "the worker read frames of many envelopes";
}

}  // namespace
}  // namespace ckpt::testing
