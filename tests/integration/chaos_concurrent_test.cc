// Things at the same moment: two hellos for one task, two takeover hellos, two operators updating
// different fields of one pipeline. Each trial lines the calls up on a latch; what must hold holds
// whichever wins.
#include <gtest/gtest.h>

#include <functional>
#include <latch>
#include <thread>

#include "chaos_fixture.h"
#include "common/grpc_code_name.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;

// ---------------------------------------------------------------------------------------------
// Duplicate registrations at the same moment.

// Sends both hellos at the same moment, each from a thread of its own.
void HellosAtOnce(const std::function<void()>& hello1, const std::function<void()>& hello2) {
  std::latch go(3);
  std::thread t1([&] {
    go.arrive_and_wait();
    hello1();
  });
  std::thread t2([&] {
    go.arrive_and_wait();
    hello2();
  });
  go.arrive_and_wait();
  t1.join();
  t2.join();
}

// "welcome", or the status the stream ended with.
std::string Outcome(RawWorker& w) {
  if (w.WaitWelcome()) return "welcome";
  auto s = w.WaitEnd();
  if (!s) return "nothing";
  return std::string(cli::GrpcCodeName(s->error_code()));
}

TEST_F(ChaosTest, SimultaneousHellosForOneTaskWelcomeExactlyOne) {
  config_.pipelines = {TestSpec("p", {"a", "b"}, 100)};
  StartDaemon();
  constexpr int kTrials = 25;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    {
      RawWorker w1(channel_), w2(channel_);
      // Overlapping, not equal, task sets: b is contended too.
      HellosAtOnce(
          [&] {
            w1.Hello("job", "p", {"a", "b"}, false, "w1");
          },
          [&] {
            w2.Hello("job", "p", {"b", "a"}, false, "w2");
          });
      const std::string o1 = Outcome(w1), o2 = Outcome(w2);
      const bool one_each = (o1 == "welcome" && o2 == "ALREADY_EXISTS") ||
                            (o2 == "welcome" && o1 == "ALREADY_EXISTS");
      ASSERT_TRUE(one_each) << "w1: " << o1 << ", w2: " << o2;
      auto s = Describe("p");
      EXPECT_EQ(s.sessions, 1);
      EXPECT_EQ(s.registered_tasks, 2);
      // The winner is a working stream.
      RawWorker& winner = o1 == "welcome" ? w1 : w2;
      auto t = winner.WaitTrigger();
      ASSERT_TRUE(t);
      winner.Ack(t->trigger().checkpoint_id(), "a");
      winner.Ack(t->trigger().checkpoint_id(), "b");
      ASSERT_TRUE(winner.WaitFor([&](const auto& m) {
        return m.has_complete() && m.complete().checkpoint_id() == t->trigger().checkpoint_id();
      }));
    }
    ASSERT_TRUE(Eventually([&] {
      return Describe("p").sessions == 0 && daemon_->metrics().worker_sessions.load() == 0;
    }));
  }
}

TEST_F(ChaosTest, SimultaneousTakeoverHellosLeaveExactlyOneStream) {
  config_.pipelines = {TestSpec("p", {"a"}, 100)};
  StartDaemon();
  constexpr int kTrials = 25;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    {
      RawWorker w1(channel_), w2(channel_);
      HellosAtOnce([&] { w1.Hello("job", "p", {"a"}, true, "w1"); },
                   [&] { w2.Hello("job", "p", {"a"}, true, "w2"); });
      // Both are welcomed in turn; the later one takes the task from the earlier one.
      ASSERT_TRUE(w1.WaitWelcome());
      ASSERT_TRUE(w2.WaitWelcome());
      ASSERT_TRUE(Eventually([&] {
        return w1.WaitEnd(milliseconds(0)) || w2.WaitEnd(milliseconds(0));
      })) << "neither stream was taken over";
      auto e1 = w1.WaitEnd(milliseconds(0));
      auto e2 = w2.WaitEnd(milliseconds(0));
      ASSERT_TRUE(e1.has_value() != e2.has_value())
          << "w1 " << (e1 ? std::to_string(e1->error_code()) : "open") << ", w2 "
          << (e2 ? std::to_string(e2->error_code()) : "open");
      EXPECT_EQ((e1 ? e1 : e2)->error_code(), grpc::StatusCode::ABORTED);
      RawWorker& winner = e1 ? w2 : w1;
      EXPECT_EQ(Describe("p").sessions, 1);
      auto t = winner.WaitTrigger();
      ASSERT_TRUE(t);
      winner.Ack(t->trigger().checkpoint_id(), "a");
      ASSERT_TRUE(winner.WaitFor([&](const auto& m) {
        return m.has_complete() && m.complete().checkpoint_id() == t->trigger().checkpoint_id();
      }));
    }
    ASSERT_TRUE(Eventually([&] {
      return Describe("p").sessions == 0 && daemon_->metrics().worker_sessions.load() == 0;
    }));
  }
}

// ---------------------------------------------------------------------------------------------
// Operators at the same moment.

TEST_F(ChaosTest, ConcurrentUpdatesOfDifferentFieldsAreBothApplied) {
  // Two operators update different fields of one pipeline at the same moment; each gets OK, so
  // both changes must hold afterwards.
  config_.pipelines = {TestSpec("p", {"a"}, 100)};
  StartAdmin();
  constexpr int kTrials = 50;
  int lost = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const int64_t interval = 1000 + trial, timeout = 20000 + trial;
    std::latch go(3);
    grpc::Status s1, s2;
    std::thread t1([&] {
      v1::PipelineSpec spec;
      spec.set_job_id("job");
      spec.set_pipeline_id("p");
      spec.set_interval_ms(interval);
      grpc::ClientContext ctx;
      v1::Pipeline reply;
      go.arrive_and_wait();
      s1 = admin_->UpdatePipeline(&ctx, spec, &reply);
    });
    std::thread t2([&] {
      v1::PipelineSpec spec;
      spec.set_job_id("job");
      spec.set_pipeline_id("p");
      spec.set_timeout_ms(timeout);
      grpc::ClientContext ctx;
      v1::Pipeline reply;
      go.arrive_and_wait();
      s2 = admin_->UpdatePipeline(&ctx, spec, &reply);
    });
    go.arrive_and_wait();
    t1.join();
    t2.join();
    ASSERT_TRUE(s1.ok() && s2.ok()) << s1.error_message() << " / " << s2.error_message();
    auto st = Describe("p");
    if (st.spec.interval_ms != interval || st.spec.timeout_ms != timeout) ++lost;
  }
  EXPECT_EQ(lost, 0) << lost << " of " << kTrials
                     << " trials lost one of two concurrent updates that were both answered OK";
}

}  // namespace
}  // namespace ckpt::testing
