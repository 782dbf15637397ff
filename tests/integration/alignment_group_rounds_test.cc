// Alignment group rounds against a real daemon with SDK workers (docs/PROTOCOL.md, "Aligned
// checkpoints"; docs/ALIGNMENT.md): members on different event loops checkpoint with one id per
// round and complete together in the store; a decline fails only the member it came from; a
// stuck member holds the group until the deadline expires it; an operator's checkpoint or
// savepoint of one member is the whole group's; the group goes on after a restart.
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "acking_worker.h"
#include "daemon_fixture.h"

namespace ckpt::testing {
namespace {

class AlignmentGroupRoundsTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    config_.threads = 3;
    AlignmentGroupSpec group;
    group.name = "ledger";
    group.interval_ms = 100;
    group.timeout_ms = 10000;
    config_.alignment_groups = {group};
  }

  std::string Address() { return "127.0.0.1:" + std::to_string(daemon_->grpc_port()); }

  // Three pipeline names whose pipelines live on three different event loops.
  std::vector<std::string> NamesOnDifferentLoops() {
    std::vector<std::string> names;
    std::set<const void*> loops;
    for (int i = 0; names.size() < 3 && i < 1000; ++i) {
      const std::string name = "m" + std::to_string(i);
      if (loops.insert(&daemon_->shards().For({"job", name})).second) names.push_back(name);
    }
    EXPECT_EQ(names.size(), 3u);
    return names;
  }

  // Creates the members (two tasks each) through the API and serves each with a worker.
  void StartMembers(const std::vector<std::string>& names) {
    for (const auto& name : names) {
      PipelineSpec spec = TestSpec(name, {"0", "1"}, 60000);  // its own interval: unused
      spec.alignment_group = "ledger";
      spec.tolerable_failures = 5;  // a FAILED member would hold the group
      CreateThroughApi(spec);
    }
    runtime_ = std::make_unique<sdk::WorkerRuntime>(Address());
    for (const auto& name : names) {
      workers_.push_back(
          std::make_unique<AckingWorker>(*runtime_, name, std::vector<std::string>{"0", "1"}));
    }
  }

  bool AllCompletedAtLeast(int n) {
    for (const auto& w : workers_) {
      if (w && w->completes.load() < n) return false;
    }
    return true;
  }

  std::vector<CompletedCheckpoint> History(const std::string& name) {
    auto history = daemon_->store().ListCompleted({"job", name}, 0);
    EXPECT_TRUE(history.ok()) << history.status().ToString();
    return history.ok() ? *history : std::vector<CompletedCheckpoint>{};
  }

  std::shared_ptr<PipelineRunner> Runner(const std::string& name) {
    return daemon_->pipelines().registry().Find({"job", name});
  }

  void TearDown() override {
    workers_.clear();
    runtime_.reset();
    DaemonTest::TearDown();
  }

  std::unique_ptr<sdk::WorkerRuntime> runtime_;
  std::vector<std::unique_ptr<AckingWorker>> workers_;
};

TEST_F(AlignmentGroupRoundsTest, MembersOnDifferentLoopsCompleteEveryRoundWithOneId) {
  StartDaemon();
  const auto names = NamesOnDifferentLoops();
  StartMembers(names);
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(5); }));

  // Every worker heard the same rounds complete, in the same order.
  const auto first = workers_[0]->Completed();
  for (const auto& w : workers_) {
    const auto heard = w->Completed();
    ASSERT_GE(heard.size(), 5u);
    EXPECT_EQ(std::vector<int64_t>(heard.begin(), heard.begin() + 5),
              std::vector<int64_t>(first.begin(), first.begin() + 5));
  }
  // Each of those rounds is in every member's history, marked with the group.
  daemon_->store().Flush();
  for (const auto& name : names) {
    std::set<int64_t> stored;
    for (const auto& c : History(name)) {
      EXPECT_EQ(c.alignment_group, "ledger") << name << " " << c.checkpoint_id;
      EXPECT_EQ(c.task_states.size(), 2u);
      stored.insert(c.checkpoint_id);
    }
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_TRUE(stored.count(first[i])) << name << " lacks group round " << first[i];
    }
  }
}

TEST_F(AlignmentGroupRoundsTest, ADeclineFailsOnlyItsMemberAndAbortsTheRoundForTheOthers) {
  StartDaemon();
  const auto names = NamesOnDifferentLoops();
  StartMembers(names);
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(1); }));
  workers_[1]->decline_next = 1;
  ASSERT_TRUE(Eventually([&] { return Describe(names[1]).counters.failed_count == 1; }));
  const int after = workers_[0]->completes.load();
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(after + 2); }))
      << "the group goes on after the failed round";
  for (size_t i : {0u, 2u}) {
    const auto counters = Describe(names[i]).counters;
    EXPECT_EQ(counters.failed_count, 0) << names[i] << ": another member's decline";
    EXPECT_EQ(counters.consecutive_failures, 0);
    EXPECT_GE(workers_[i]->aborts.load(), 1) << names[i] << " heard no abort";
  }
  const auto& rounds = daemon_->metrics().group_rounds_total;
  EXPECT_EQ(rounds[static_cast<size_t>(GroupRoundResult::kFailed)].load(), 1u)
      << "ckptd_group_rounds_total{result=\"failed\"}";
  EXPECT_GE(rounds[static_cast<size_t>(GroupRoundResult::kCompleted)].load(), 3u);
  // The declined round completed nowhere.
  const auto declined = workers_[1]->Declined();
  ASSERT_EQ(declined.size(), 1u);
  for (const auto& w : workers_) {
    for (int64_t id : w->Completed()) EXPECT_NE(id, declined[0]);
  }
  for (const auto& name : names) {
    for (const auto& c : History(name)) EXPECT_NE(c.checkpoint_id, declined[0]) << name;
  }
}

TEST_F(AlignmentGroupRoundsTest, AStuckMemberHoldsTheGroupUntilTheDeadlineExpiresItThere) {
  config_.alignment_groups[0].timeout_ms = 1500;
  StartDaemon();
  const auto names = NamesOnDifferentLoops();
  StartMembers(names);
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(1); }));
  workers_[2]->hold = true;
  ASSERT_TRUE(Eventually([&] { return Describe(names[2]).counters.expired_count >= 1; }));
  const int completed_by_first = workers_[0]->completes.load();
  EXPECT_EQ(Describe(names[0]).counters.expired_count, 0) << "it acked: not its expiry";
  EXPECT_EQ(Describe(names[1]).counters.failed_count, 0);
  // Still stuck: nothing completes anywhere while the third member does not ack.
  ASSERT_TRUE(Eventually([&] { return Describe(names[2]).counters.expired_count >= 2; }));
  EXPECT_EQ(workers_[0]->completes.load(), completed_by_first);
  workers_[2]->hold = false;
  ASSERT_TRUE(Eventually([&] { return workers_[0]->completes.load() > completed_by_first; }));
}

// `pipeline why` of a member names the member holding the group's round; deleting a member
// whose part is done waits for the round's outcome (here: the group aborts it), the others go
// on, and a pipeline created again under the deleted name continues above the group's ids.
TEST_F(AlignmentGroupRoundsTest, WhyNamesTheMemberHoldingTheGroupAndAMemberCanBeDeletedMidRound) {
  StartDaemon();
  const auto names = NamesOnDifferentLoops();
  StartMembers(names);
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(1); }));
  workers_[2]->hold = true;
  // The round in flight may have had its ack already: wait for one that starts held.
  const size_t heard = workers_[2]->Triggered().size();
  ASSERT_TRUE(Eventually([&] { return workers_[2]->Triggered().size() > heard; }));
  auto completing = [&](const std::string& name) {
    std::promise<bool> p;
    Runner(name)->Inspect([&p](const PipelineCoordinator& c) { p.set_value(c.GroupPartDone()); });
    return p.get_future().get();
  };
  // Both others acked, so the third alone holds the round (the sentence and the view name
  // every member still owing an ack, in key order).
  ASSERT_TRUE(Eventually([&] { return completing(names[0]) && completing(names[1]); }))
      << "their parts are done";

  std::promise<std::pair<Explanation, std::string>> why;
  Runner(names[0])->Explain(0, [&](Status s, const Explanation& e, const std::string& sentence) {
    EXPECT_TRUE(s.ok());
    why.set_value({e, sentence});
  });
  auto [explanation, sentence] = why.get_future().get();
  EXPECT_EQ(explanation.holdup, Holdup::kWaitingForGroup) << sentence;
  EXPECT_EQ(explanation.alignment_group, "ledger");
  ASSERT_FALSE(explanation.group_holding.empty());
  EXPECT_EQ(explanation.group_holding.front().first, (PipelineKey{"job", names[2]}));
  EXPECT_NE(sentence.find("job/" + names[2] + " has not acked group round"), std::string::npos)
      << sentence;

  // `group get`: the group's own view names the same member.
  std::promise<Result<AlignmentGroupView>> group;
  daemon_->pipelines().groups().Describe(
      "ledger", [&](Result<AlignmentGroupView> view) { group.set_value(std::move(view)); });
  auto view = group.get_future().get();
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(view->live.has_value());
  EXPECT_EQ(view->live->pending_checkpoint_id, explanation.group_pending_checkpoint_id);
  ASSERT_EQ(view->live->holding.size(), 1u);
  EXPECT_EQ(view->live->holding.front().first, (PipelineKey{"job", names[2]}));
  EXPECT_GT(view->group.progress.last_round_id, 0) << "the live progress, not the load's";

  int64_t highest = 0;
  for (int64_t id : workers_[2]->Triggered()) highest = std::max(highest, id);
  // Its part is done: the delete waits until the group ended the round (aborted, as a member
  // left before the commit), then goes.
  std::promise<Status> deleted;
  auto runner = Runner(names[0]);
  daemon_->pipelines().Delete(runner, [&](Status s) { deleted.set_value(s); });
  auto deleted_status = deleted.get_future();
  ASSERT_EQ(deleted_status.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_TRUE(deleted_status.get().ok());
  workers_[2]->hold = false;
  const int before = workers_[1]->completes.load();
  ASSERT_TRUE(Eventually([&] { return workers_[1]->completes.load() >= before + 2; }))
      << "the two members left go on";
  for (int64_t id : workers_[1]->Triggered()) highest = std::max(highest, id);

  workers_[0].reset();                                      // its worker: the pipeline is gone
  PipelineSpec again = TestSpec(names[0], {"0", "1"}, 50);  // on its own now
  CreateThroughApi(again);
  AckingWorker alone(*runtime_, names[0], {"0", "1"});
  ASSERT_TRUE(Eventually([&] { return alone.completes.load() >= 1; }));
  EXPECT_GT(alone.Completed().front(), highest) << "an id the group handed out, again";
}

// Waits for a savepoint's final update.
class FinalUpdate : public SavepointObserver {
 public:
  void OnSavepointUpdate(const SavepointUpdate& update) override {
    if (update.final()) done_.set_value(update);
  }
  std::future<SavepointUpdate> Get() { return done_.get_future(); }

 private:
  std::promise<SavepointUpdate> done_;
};

TEST_F(AlignmentGroupRoundsTest, ACheckpointOrSavepointOfOneMemberIsTheWholeGroups) {
  config_.alignment_groups[0].interval_ms = 600000;  // the first round only, then by hand
  StartDaemon();
  const auto names = NamesOnDifferentLoops();
  StartMembers(names);
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(1); }));

  std::promise<std::pair<Status, int64_t>> triggered;
  Runner(names[0])->TriggerCheckpoint([&](Status s, const std::optional<PendingSummary>& pending) {
    triggered.set_value({s, pending ? pending->checkpoint_id : 0});
  });
  auto [status, id] = triggered.get_future().get();
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_GT(id, 0) << "the answer names the group's round";
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(2); }));
  for (const auto& w : workers_) EXPECT_EQ(w->last_complete.load(), id);

  auto observer = std::make_shared<FinalUpdate>();
  auto final_update = observer->Get();
  Runner(names[1])->RequestSavepoint("", false, Millis(10000), observer);
  ASSERT_EQ(final_update.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const SavepointUpdate done = final_update.get();
  ASSERT_EQ(done.phase, SavepointPhase::kCompleted) << done.failure_reason;
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(3); }));
  for (const auto& w : workers_) {
    EXPECT_EQ(w->last_complete.load(), done.savepoint_id);
    EXPECT_EQ(w->last_complete_kind.load(), sdk::CheckpointKind::kSavepoint);
  }
  for (const auto& name : names) {
    const auto history = History(name);
    ASSERT_FALSE(history.empty());
    EXPECT_EQ(history.front().checkpoint_id, done.savepoint_id);
    EXPECT_EQ(history.front().location, config_.data_dir + "/savepoints/job/" + name + "/" +
                                            std::to_string(done.savepoint_id));
  }

  // A target is refused: each member's state goes to its own default location.
  auto refused = std::make_shared<FinalUpdate>();
  auto refused_update = refused->Get();
  Runner(names[2])->RequestSavepoint("/elsewhere", false, Millis(10000), refused);
  ASSERT_EQ(refused_update.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(refused_update.get().phase, SavepointPhase::kFailed);
}

TEST_F(AlignmentGroupRoundsTest, TheGroupGoesOnAfterARestartAboveEveryIdItUsed) {
  StartDaemon();
  const auto names = NamesOnDifferentLoops();
  StartMembers(names);
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(3); }));
  workers_.clear();
  runtime_.reset();
  int64_t newest = 0;
  for (const auto& name : names) {
    for (const auto& c : History(name)) newest = std::max(newest, c.checkpoint_id);
  }
  config_.listen = Address();
  StopDaemon();
  StartDaemon();
  runtime_ = std::make_unique<sdk::WorkerRuntime>(Address());
  for (const auto& name : names) {
    workers_.push_back(
        std::make_unique<AckingWorker>(*runtime_, name, std::vector<std::string>{"0", "1"}));
  }
  ASSERT_TRUE(Eventually([&] { return AllCompletedAtLeast(2); }));
  for (const auto& w : workers_) {
    EXPECT_GT(w->Completed().front(), newest) << "an id from before the restart again";
  }
  const auto first = workers_[0]->Completed();
  for (const auto& w : workers_) EXPECT_EQ(w->Completed().front(), first.front());
}

}  // namespace
}  // namespace ckpt::testing
