// SavepointQueue: one savepoint waits at a time, the same request joins it and another is refused,
// a worker's request outlives its operator callers, and workers' requests are bounded per minute
// and to their job's directory.
#include "core/savepoint_queue.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ckpt {
namespace {

using Offered = SavepointQueue::Offered;
using std::chrono::seconds;

const SteadyTime kAskedAt = SteadyTime{} + std::chrono::hours(1);

SavepointQueue::Request Asked(std::string target, bool stop, bool worker_asked = false) {
  return {std::move(target), stop, kAskedAt + seconds(30), worker_asked};
}

TEST(SavepointQueue, TheSameRequestJoinsTheWaitingOneAndAnotherIsRefused) {
  SavepointQueue queue;
  EXPECT_EQ(queue.queued(), nullptr);
  EXPECT_EQ(queue.Offer(Asked("", false)), Offered::kQueued);
  EXPECT_EQ(queue.Offer(Asked("", false)), Offered::kJoined);
  EXPECT_EQ(queue.Offer(Asked("", true)), Offered::kDiffers);        // stop differs
  EXPECT_EQ(queue.Offer(Asked("/sp/x", false)), Offered::kDiffers);  // target differs
  ASSERT_NE(queue.queued(), nullptr);
  EXPECT_EQ(queue.queued()->kind(), CheckpointKind::kSavepoint);
  EXPECT_EQ(queue.queued()->deadline, kAskedAt + seconds(30));  // the first request's deadline
}

TEST(SavepointQueue, TakeEmptiesTheQueueAndHandsOverTheRequest) {
  SavepointQueue queue;
  EXPECT_EQ(queue.Take(), std::nullopt);
  queue.Offer(Asked("/sp/a", true, /*worker_asked=*/true));
  const auto taken = queue.Take();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->target, "/sp/a");
  EXPECT_EQ(taken->kind(), CheckpointKind::kSavepointAndStop);
  EXPECT_TRUE(taken->worker_asked);
  EXPECT_EQ(queue.queued(), nullptr);
  EXPECT_EQ(queue.Take(), std::nullopt);
  EXPECT_EQ(queue.Offer(Asked("/sp/b", false)), Offered::kQueued);  // room for the next
}

TEST(SavepointQueue, OperatorsLeavingDropItUnlessAWorkerAskedToo) {
  SavepointQueue operators_only;
  operators_only.Offer(Asked("", false));
  EXPECT_TRUE(operators_only.DropIfNoWorkerWaits());
  EXPECT_EQ(operators_only.queued(), nullptr);
  EXPECT_FALSE(operators_only.DropIfNoWorkerWaits());  // nothing left to drop

  SavepointQueue joined_by_a_worker;
  joined_by_a_worker.Offer(Asked("", false));
  joined_by_a_worker.Offer(Asked("", false, /*worker_asked=*/true));
  EXPECT_FALSE(joined_by_a_worker.DropIfNoWorkerWaits());
  ASSERT_NE(joined_by_a_worker.queued(), nullptr);
  EXPECT_TRUE(joined_by_a_worker.queued()->worker_asked);
}

TEST(SavepointQueue, WorkerRequestsAreBoundedPerMinuteAndTheWindowSlides) {
  SavepointQueue queue;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(queue.AdmitWorkerRequest(kAskedAt + seconds(i), 3).ok());
  }
  const Status fourth = queue.AdmitWorkerRequest(kAskedAt + seconds(10), 3);
  EXPECT_EQ(fourth.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.message().find("savepoint_requests_per_minute (3)"), std::string::npos);
  // A minute after the first, one place is free again; a refusal took none.
  EXPECT_TRUE(queue.AdmitWorkerRequest(kAskedAt + seconds(60), 3).ok());
  EXPECT_FALSE(queue.AdmitWorkerRequest(kAskedAt + seconds(60), 3).ok());
  // The request times do not keep a queued savepoint alive, nor the other way round.
  EXPECT_EQ(queue.Offer(Asked("", false)), Offered::kQueued);
  EXPECT_TRUE(queue.Take().has_value());
  EXPECT_EQ(queue.queued(), nullptr);
  EXPECT_FALSE(queue.AdmitWorkerRequest(kAskedAt + std::chrono::milliseconds(60500), 3).ok());
}

TEST(SavepointQueue, AWorkersTargetMustLieUnderItsJobsDirectory) {
  EXPECT_TRUE(SavepointQueue::CheckWorkerTarget("", "/sp/job").ok());
  EXPECT_TRUE(SavepointQueue::CheckWorkerTarget("/sp/job/a", "/sp/job").ok());
  const Status other_job = SavepointQueue::CheckWorkerTarget("/sp/job2/a", "/sp/job");
  EXPECT_EQ(other_job.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(other_job.message().find("/sp/job/"), std::string::npos) << other_job.ToString();
  EXPECT_EQ(SavepointQueue::CheckWorkerTarget("/sp/job/../other", "/sp/job").code(),
            StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace ckpt
