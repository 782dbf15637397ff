// The user's own work on a pipeline's serialized context (PipelineWorker::Post and RunAfter): it
// never runs beside a handler, runs in the order it was posted, waits its delay, and is destroyed
// unrun when the runtime goes first.
#include <gtest/gtest.h>

#include <ckpt/worker.h>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "daemon_fixture.h"

namespace ckpt::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Threads enough that work which was not serialized with a handler would find one idle.
constexpr int kRuntimeThreads = 4;
// How long a handler (or a first piece of work) keeps running while it watches for other work to
// start. Work that escaped the serialized context starts within this on an idle thread;
// serialized work cannot start before the running piece returns, however long the wait.
constexpr milliseconds kHandlerHold{300};
// Deadline for what must happen; generous for loaded CI machines.
constexpr milliseconds kDeadline{10000};

// Schedules work on a worker: Post, or RunAfter with some delay.
using Schedule = std::function<void(sdk::PipelineWorker&, std::function<void()>)>;

// What the work scheduled from inside a handler saw.
struct Seen {
  bool started_while_the_handler_ran = false;
  bool ran = false;
  milliseconds scheduled_to_run{0};
};

class SdkUserWorkTest : public DaemonTest {
 protected:
  std::string Address() { return "127.0.0.1:" + std::to_string(daemon_->grpc_port()); }

  // Serves pipeline "p"; its on_welcome schedules one piece of work with `schedule`, then keeps
  // running for kHandlerHold, watching whether the work starts meanwhile.
  Seen ScheduleFromAHandler(const Schedule& schedule) {
    config_.pipelines = {TestSpec("p", {"0"}, 60000)};  // no trigger needed: welcome is enough
    StartDaemon();
    std::atomic<bool> in_handler{false};
    std::atomic<bool> started_in_handler{false};
    std::promise<void> started;
    std::future<void> started_future = started.get_future();
    std::promise<milliseconds> ran;
    std::future<milliseconds> ran_future = ran.get_future();
    sdk::PipelineWorker* self = nullptr;
    sdk::PipelineHandlers handlers;
    handlers.on_welcome = [&](const sdk::Welcome&) {
      in_handler = true;
      const steady_clock::time_point scheduled_at = steady_clock::now();
      schedule(*self, [&, scheduled_at] {
        started_in_handler = in_handler.load();
        started.set_value();
        ran.set_value(std::chrono::duration_cast<milliseconds>(steady_clock::now() - scheduled_at));
      });
      // Blocking a handler is what users must not do; here it is the point: it holds the
      // pipeline's context while other runtime threads sit idle.
      started_future.wait_for(kHandlerHold);
      in_handler = false;
    };
    // Destroyed before what the handler and the work refer to (declared above).
    sdk::WorkerRuntime runtime(Address(), kRuntimeThreads);
    std::shared_ptr<sdk::PipelineWorker> worker = runtime.AddPipeline(
        {.worker_id = "w", .job_id = "job", .pipeline_id = "p", .task_ids = {"0"}},
        std::move(handlers));
    self = worker.get();
    worker->Start();
    Seen seen;
    if (ran_future.wait_for(kDeadline) != std::future_status::ready) return seen;
    seen.ran = true;
    seen.scheduled_to_run = ran_future.get();
    seen.started_while_the_handler_ran = started_in_handler.load();
    return seen;
  }
};

TEST_F(SdkUserWorkTest, PostedWorkWaitsForTheRunningHandler) {
  const Seen seen = ScheduleFromAHandler(
      [](sdk::PipelineWorker& worker, std::function<void()> fn) { worker.Post(std::move(fn)); });
  ASSERT_TRUE(seen.ran) << "posted work never ran";
  EXPECT_FALSE(seen.started_while_the_handler_ran)
      << "posted work ran beside the handler, off the pipeline's serialized context";
  EXPECT_GE(seen.scheduled_to_run, kHandlerHold - milliseconds(1))
      << "posted work started before the handler returned";
}

TEST_F(SdkUserWorkTest, DelayedWorkWaitsItsDelayAndForTheRunningHandler) {
  // Shorter than kHandlerHold: escaped work would start while the handler still runs.
  constexpr milliseconds kDelay{20};
  const Seen seen =
      ScheduleFromAHandler([&](sdk::PipelineWorker& worker, std::function<void()> fn) {
        worker.RunAfter(kDelay, std::move(fn));
      });
  ASSERT_TRUE(seen.ran) << "delayed work never ran";
  EXPECT_FALSE(seen.started_while_the_handler_ran)
      << "delayed work ran beside the handler, off the pipeline's serialized context";
  EXPECT_GE(seen.scheduled_to_run, kDelay);
}

// A worker that is never started: Post and RunAfter need no stream, and no daemon.
std::shared_ptr<sdk::PipelineWorker> IdleWorker(sdk::WorkerRuntime& runtime) {
  return runtime.AddPipeline(
      {.worker_id = "w", .job_id = "job", .pipeline_id = "p", .task_ids = {"0"}}, {});
}

TEST(SdkUserWork, PostedWorkRunsInOrderOneAtATime) {
  constexpr int kPosts = 2000;
  sdk::WorkerRuntime runtime("127.0.0.1:1", kRuntimeThreads);  // never connected
  std::shared_ptr<sdk::PipelineWorker> worker = IdleWorker(runtime);
  std::promise<void> next_started;
  std::future<void> next_started_future = next_started.get_future();
  std::atomic<bool> next_started_meanwhile{false};
  // The first piece holds the context as a handler would; the next may not start meanwhile.
  worker->Post([&] {
    next_started_meanwhile =
        next_started_future.wait_for(kHandlerHold) == std::future_status::ready;
  });
  // No lock: the work is serialized (a data race here is what TSan would report otherwise).
  std::vector<int> order;
  std::promise<void> done;
  for (int i = 0; i < kPosts; ++i) {
    worker->Post([&, i] {
      if (i == 0) next_started.set_value();
      order.push_back(i);
      if (i == kPosts - 1) done.set_value();
    });
  }
  ASSERT_EQ(done.get_future().wait_for(kDeadline), std::future_status::ready);
  EXPECT_FALSE(next_started_meanwhile.load()) << "two pieces of posted work ran at once";
  ASSERT_EQ(order.size(), static_cast<size_t>(kPosts));
  for (int i = 0; i < kPosts; ++i) ASSERT_EQ(order[i], i) << "posted work ran out of order";
}

TEST(SdkUserWork, WorkStillWaitingWhenTheRuntimeGoesIsDestroyedUnrun) {
  auto runtime = std::make_unique<sdk::WorkerRuntime>("127.0.0.1:1");  // never connected
  std::shared_ptr<sdk::PipelineWorker> worker = IdleWorker(*runtime);
  std::atomic<int> runs{0};
  auto captured = std::make_shared<int>(0);
  std::weak_ptr<int> waiting = captured;
  worker->RunAfter(std::chrono::hours(1), [captured = std::move(captured), &runs] { ++runs; });
  EXPECT_FALSE(waiting.expired()) << "the delayed work was dropped at once";

  runtime.reset();
  EXPECT_TRUE(waiting.expired()) << "the runtime is gone but still holds the delayed work";

  // Handles outlive the runtime: their Post and RunAfter then drop the work at once.
  auto posted = std::make_shared<int>(0);
  std::weak_ptr<int> posted_watch = posted;
  worker->Post([posted = std::move(posted), &runs] { ++runs; });
  EXPECT_TRUE(posted_watch.expired());
  auto delayed = std::make_shared<int>(0);
  std::weak_ptr<int> delayed_watch = delayed;
  worker->RunAfter(milliseconds(0), [delayed = std::move(delayed), &runs] { ++runs; });
  EXPECT_TRUE(delayed_watch.expired());
  EXPECT_EQ(runs.load(), 0);
}

}  // namespace
}  // namespace ckpt::testing
