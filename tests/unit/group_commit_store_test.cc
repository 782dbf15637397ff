// GroupCommitStore, the backend-neutral writer of every store (store/group_commit_store.h), over
// the in-memory backend: batching, pacing by a clock the test moves by hand (no sleeps), callbacks
// in call order, Flush, and what each batch outcome leads to.
#include "store/group_commit_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "store_test_util.h"
#include "support/manual_pacing_clock.h"
#include "support/memory_backend.h"

namespace ckpt {
namespace {

using std::chrono::milliseconds;

constexpr auto kDeadline = std::chrono::duration_cast<milliseconds>(kStoreTestDeadline);

class GroupCommitStoreTest : public ::testing::Test {
 protected:
  // A store over a fresh MemoryBackend (backend_ points at it), paced by clock_.
  void Open(std::chrono::microseconds spacing = std::chrono::microseconds(0), int writer_nice = 0) {
    auto backend = std::make_unique<MemoryBackend>();
    backend_ = backend.get();
    GroupCommitOptions options;
    options.min_batch_spacing = spacing;
    options.writer_nice = writer_nice;
    options.clock = &clock_;
    options.on_fatal = [this](const Status& s) {
      std::lock_guard lock(mu_);
      fatal_.push_back(s);
    };
    store_ = std::make_unique<GroupCommitStore>(std::move(backend), std::move(options));
  }
  std::vector<Status> fatal() {
    std::lock_guard lock(mu_);
    return fatal_;
  }

  ManualPacingClock clock_;  // outlives the store
  MemoryBackend* backend_ = nullptr;
  std::unique_ptr<GroupCommitStore> store_;
  std::mutex mu_;
  std::vector<Status> fatal_;  // guarded by mu_
};

TEST_F(GroupCommitStoreTest, WritesQueuedBehindABusyWriterShareOneBatchAndAnswerInCallOrder) {
  Open();
  backend_->HoldBatches();
  store_->ReserveIds({"j", "first"}, 1, nullptr);
  ASSERT_TRUE(backend_->WaitUntilABatchIsHeld(kDeadline));
  Outcomes outcomes;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 1; i <= 50; ++i) {
        store_->ReserveIds({"j", "p" + std::to_string(t)}, i, outcomes.Record(t * 100 + i));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  backend_->ReleaseBatches();
  store_->Flush();
  EXPECT_EQ(backend_->batch_sizes(), (std::vector<size_t>{1, 200}));
  auto seen = outcomes.seen();
  ASSERT_EQ(seen.size(), 200u);
  std::vector<int> last(4, 0);
  for (const auto& [n, status] : seen) {
    EXPECT_TRUE(status.ok()) << status.ToString();
    EXPECT_GT(n % 100, last[n / 100]) << "a caller's callbacks run in its call order";
    last[n / 100] = n % 100;
  }
  EXPECT_EQ(*store_->LoadIdCounter({"j", "p3"}), 50);
  EXPECT_EQ(store_->batches_committed(), 2u);
  EXPECT_EQ(store_->ops_committed(), 201u);
}

TEST_F(GroupCommitStoreTest, APacedWriterGathersWhatArrivesWithinTheSpacing) {
  Open(milliseconds(2));
  // The first write of an idle writer is applied at once: no batch began before it.
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "first"}, 1, done); }).ok());
  EXPECT_EQ(clock_.sleeps(), 0);
  // The next ones arrive within 2 ms of that batch's start (the clock stands still): the writer
  // waits for the spacing, and everything that arrives meanwhile shares the next batch.
  store_->ReserveIds({"j", "p0"}, 1, nullptr);
  auto until = clock_.WaitForSleeper(kDeadline);
  ASSERT_TRUE(until) << "the writer did not pace";
  EXPECT_EQ(*until, clock_.Now() + milliseconds(2));
  std::atomic<int> ok{0};
  for (int i = 1; i <= 9; ++i) {
    store_->ReserveIds({"j", "p" + std::to_string(i)}, i, [&](Status s) {
      if (s.ok()) ok.fetch_add(1);
    });
  }
  EXPECT_EQ(backend_->batch_sizes(), (std::vector<size_t>{1})) << "nothing applied while pacing";
  clock_.Advance(milliseconds(2));
  store_->Flush();
  EXPECT_EQ(ok.load(), 9);
  EXPECT_EQ(backend_->batch_sizes(), (std::vector<size_t>{1, 10}));
}

TEST_F(GroupCommitStoreTest, AWriterIdleForLongerThanTheSpacingDoesNotPace) {
  Open(milliseconds(2));
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "p"}, 1, done); }).ok());
  clock_.Advance(milliseconds(3));
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "p"}, 2, done); }).ok());
  // The writer looked at the clock, found the spacing over, and went on without sleeping.
  EXPECT_EQ(clock_.sleeps(), 0);
  EXPECT_EQ(backend_->batch_sizes(), (std::vector<size_t>{1, 1}));
}

TEST_F(GroupCommitStoreTest, ClosingDoesNotWaitForPacingAndAppliesWhatIsQueued) {
  Open(std::chrono::hours(1));
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "p"}, 1, done); }).ok());
  std::promise<Status> queued;
  store_->ReserveIds({"j", "p"}, 2, [&](Status s) { queued.set_value(s); });
  ASSERT_TRUE(clock_.WaitForSleeper(kDeadline)) << "the writer paces for an hour";
  store_.reset();  // returns without the clock moving
  auto done = queued.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
}

TEST_F(GroupCommitStoreTest, FlushReturnsOnlyAfterEveryEarlierCallbackRan) {
  Open();
  std::atomic<int> called{0};
  for (int i = 1; i <= 300; ++i) {
    store_->ReserveIds({"j", "p"}, i, [&](Status) { called.fetch_add(1); });
  }
  store_->Flush();
  EXPECT_EQ(called.load(), 300);
  store_->Flush();  // nothing queued: returns at once
}

TEST_F(GroupCommitStoreTest, FlushFromACallbackReturnsInsteadOfWaitingForItself) {
  Open();
  Status s = Await([&](auto done) {
    store_->ReserveIds({"j", "p"}, 1, [this, done](Status status) {
      store_->Flush();  // on the writer thread: must not deadlock
      done(status);
    });
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(GroupCommitStoreTest, ABatchTheBackendDidNotWriteFailsEveryOpAndTheStoreGoesOn) {
  Open();
  backend_->HoldBatches();
  store_->ReserveIds({"j", "gate"}, 1, nullptr);
  ASSERT_TRUE(backend_->WaitUntilABatchIsHeld(kDeadline));
  // Three writes queued behind the held batch go as one batch, and are committed.
  Outcomes outcomes;
  for (int i = 0; i < 3; ++i) store_->ReserveIds({"j", "p"}, 10 + i, outcomes.Record(i));
  backend_->ReleaseBatches();
  store_->Flush();
  ASSERT_EQ(outcomes.seen().size(), 3u);
  for (const auto& [n, s] : outcomes.seen()) EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
  // Again behind a held batch, so that the next three are one batch: that one is refused.
  backend_->HoldBatches();
  store_->ReserveIds({"j", "gate"}, 2, nullptr);
  ASSERT_TRUE(backend_->WaitUntilABatchIsHeld(kDeadline));
  backend_->EndNextBatchWith(BatchResult::Outcome::kNotWritten,
                             Status::Unavailable("disk full (test)"));
  Outcomes refused;
  for (int i = 0; i < 3; ++i) store_->ReserveIds({"j", "q"}, 1, refused.Record(i));
  backend_->ReleaseBatches();
  store_->Flush();
  for (const auto& [n, s] : refused.seen()) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << n;
    EXPECT_EQ(s.message(), "disk full (test)");
  }
  EXPECT_EQ(refused.seen().size(), 3u);
  EXPECT_EQ(*store_->LoadIdCounter({"j", "q"}), 0) << "nothing of it was written";
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "q"}, 5, done); }).ok());
  EXPECT_EQ(*store_->LoadIdCounter({"j", "q"}), 5);
  EXPECT_TRUE(fatal().empty());
  EXPECT_EQ(store_->ops_failed(), 3u);
}

TEST_F(GroupCommitStoreTest,
       AnUnknownOutcomeAnswersNoneOfItsBatchStopsTheStoreAndFailsLaterWrites) {
  Open();
  backend_->EndNextBatchWith(BatchResult::Outcome::kStop,
                             Status::Unavailable("fsync failed (test)"));
  std::atomic<int> answered{0};
  store_->ReserveIds({"j", "p"}, 1, [&](Status) { answered.fetch_add(1); });
  store_->Flush();
  EXPECT_EQ(answered.load(), 0) << "neither outcome is reported";
  ASSERT_EQ(fatal().size(), 1u);
  EXPECT_EQ(fatal()[0].message(), "fsync failed (test)");

  const size_t batches = backend_->batch_sizes().size();
  Status later = Await([&](auto done) { store_->ReserveIds({"j", "p"}, 2, done); });
  EXPECT_EQ(later.code(), StatusCode::kUnavailable);
  EXPECT_EQ(backend_->batch_sizes().size(), batches) << "later writes never reach the backend";
  EXPECT_EQ(fatal().size(), 1u) << "stopping is reported once";
}

TEST_F(GroupCommitStoreTest, ABackendThatAnswersTheWrongNumberOfWritesStopsTheStore) {
  Open();
  backend_->AnswerNextBatchWith(0);
  std::atomic<int> answered{0};
  store_->ReserveIds({"j", "p"}, 1, [&](Status) { answered.fetch_add(1); });
  store_->Flush();
  EXPECT_EQ(answered.load(), 0);
  ASSERT_EQ(fatal().size(), 1u);
  EXPECT_EQ(fatal()[0].code(), StatusCode::kInternal) << fatal()[0].ToString();
}

TEST_F(GroupCommitStoreTest, DamageFoundByAReadStopsTheStore) {
  Open();
  backend_->FailReads(Status::DataLoss("page 7 is corrupt (test)"));
  auto listed = store_->ListCompleted({"j", "p"}, 0);
  EXPECT_EQ(listed.status().code(), StatusCode::kDataLoss);
  ASSERT_EQ(fatal().size(), 1u);
  EXPECT_EQ(fatal()[0].code(), StatusCode::kDataLoss);
  // Loading at start is left to its caller (which refuses to start): not a second report.
  EXPECT_FALSE(store_->LoadPipelines().ok());
  EXPECT_EQ(fatal().size(), 1u);
}

TEST_F(GroupCommitStoreTest, AThrowingCallbackDoesNotStopTheWriter) {
  Open();
  store_->ReserveIds({"j", "p"}, 1, [](Status) { throw std::runtime_error("callback bug"); });
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "p"}, 2, done); }).ok());
  EXPECT_EQ(*store_->LoadIdCounter({"j", "p"}), 2);
}

TEST_F(GroupCommitStoreTest, CommitLatencyIsReportedOncePerCommittedBatch) {
  Open();
  std::mutex mu;
  std::vector<int64_t> latencies;
  store_->on_commit_latency = [&](int64_t micros) {
    std::lock_guard lock(mu);
    latencies.push_back(micros);
  };
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "p"}, 1, done); }).ok());
  backend_->EndNextBatchWith(BatchResult::Outcome::kNotWritten, Status::Unavailable("no"));
  (void)Await([&](auto done) { store_->ReserveIds({"j", "p"}, 2, done); });
  ASSERT_TRUE(Await([&](auto done) { store_->ReserveIds({"j", "p"}, 3, done); }).ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(latencies.size(), 2u) << "the refused batch is not a commit";
  for (int64_t micros : latencies) EXPECT_GE(micros, 0);
}

// A nice value belongs to one thread on Linux: the writer's, not the caller's.
int ThreadNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }
bool SetThreadNice(int nice) {
  return setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) == 0;
}

class WriterNiceTest : public GroupCommitStoreTest {
 protected:
  // Each test moves threads up to two steps above the test's own value.
  void SetUp() override {
    own_ = ThreadNice();
    if (own_ > 17) GTEST_SKIP() << "this test runs at too low a priority to move it";
  }

  // The nice value the writer runs at, when the store is opened (and the writer started, which
  // inherits its opener's value) from a thread at `opener_nice`, with `writer_nice`.
  int WriterNiceOpenedAt(int opener_nice, int writer_nice) {
    std::thread opener([&] {
      ASSERT_TRUE(SetThreadNice(opener_nice));
      Open(std::chrono::microseconds(0), writer_nice);
    });
    opener.join();
    if (!store_) return 1000;  // the opener failed, and said why
    std::promise<int> nice;
    store_->ReserveIds({"j", "p"}, 1, [&](Status) { nice.set_value(ThreadNice()); });
    auto answer = nice.get_future();
    if (answer.wait_for(kDeadline) != std::future_status::ready) return 2000;
    return answer.get();
  }

  int own_ = 0;  // the test thread's nice value
};

TEST_F(WriterNiceTest, TheWriterLowersItsNiceValueWhereThatIsAllowed) {
  const int own = own_;
  // Raising a nice value needs no privilege; lowering it back does (CAP_SYS_NICE, RLIMIT_NICE).
  bool allowed = false;
  std::thread probe([&] { allowed = SetThreadNice(own + 2) && SetThreadNice(own + 1); });
  probe.join();
  if (!allowed) GTEST_SKIP() << "lowering a nice value is not allowed here";
  EXPECT_EQ(WriterNiceOpenedAt(own + 2, own + 1), own + 1);
  EXPECT_EQ(ThreadNice(), own) << "only the writer's value moves";
}

TEST_F(WriterNiceTest, AWriterNiceValueAboveTheInheritedOneLeavesIt) {
  EXPECT_EQ(WriterNiceOpenedAt(own_ + 1, own_ + 2), own_ + 1) << "lowered to it, never raised";
}

TEST_F(WriterNiceTest, AWriterNiceValueOfZeroLeavesTheInheritedOne) {
  EXPECT_EQ(WriterNiceOpenedAt(own_ + 1, 0), own_ + 1) << "0 is not a value to set";
}

}  // namespace
}  // namespace ckpt
