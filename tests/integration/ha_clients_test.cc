// The clients in an HA group: ckptctl (the binary, as a child process) and the worker SDK follow
// the leader a standby names, give up after three redirects in a row, and pass over a daemon that
// is down; the SDK drops a deposed leader's messages. The group is made of FakeHaDaemons: the
// clients' side of the protocol is under test, not the daemon's.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ckpt/worker.h>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_ha_daemon.h"
#include "support/eventually.h"

namespace ckpt::testing {
namespace {

using Role = FakeHaDaemon::Role;
using std::chrono::milliseconds;

// A loopback address nothing listens on: the port of a socket bound and closed again.
std::string DeadAddress() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

struct CtlRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CtlRun RunCtl(const std::string& servers, const std::string& args) {
  const std::string command =
      std::string(CKPT_CTL_PATH) + " --server " + servers + " " + args + " 2>&1";
  CtlRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    run.output.append(buffer, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(HaClients, CtlFollowsTheLeaderAStandbyNames) {
  FakeHaDaemon leader("leader", Role::kLeader, 7);
  FakeHaDaemon standby("standby", Role::kStandby, 7);
  standby.set_leader_hint(leader.address());
  const CtlRun run = RunCtl(standby.address(), "pipeline list");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("p-of-leader"), std::string::npos) << run.output;
  EXPECT_EQ(standby.admin_calls(), 1);
  EXPECT_EQ(leader.admin_calls(), 1);
}

TEST(HaClients, CtlGivesUpAfterThreeRedirects) {
  // s0 names s1, s1 names s2, ...: standbys that never reach a leader.
  std::vector<std::unique_ptr<FakeHaDaemon>> standbys;
  for (int i = 0; i < 5; ++i) {
    standbys.push_back(std::make_unique<FakeHaDaemon>("s" + std::to_string(i), Role::kStandby, 3));
  }
  for (int i = 0; i + 1 < 5; ++i) standbys[i]->set_leader_hint(standbys[i + 1]->address());
  const CtlRun run = RunCtl(standbys[0]->address(), "pipeline list");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::string expected =
      "ckptctl: gave up after 3 leader redirects (asked " + standbys[0]->address() + ", " +
      standbys[1]->address() + ", " + standbys[2]->address() + ", " + standbys[3]->address() +
      "; " + standbys[3]->address() + " names " + standbys[4]->address() + " as the leader)\n";
  EXPECT_EQ(run.output, expected);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(standbys[i]->admin_calls(), 1) << i;
  EXPECT_EQ(standbys[4]->admin_calls(), 0) << "a fourth redirect was followed";
}

TEST(HaClients, CtlPassesOverADaemonThatIsDown) {
  FakeHaDaemon leader("leader", Role::kLeader, 7);
  const std::string dead = DeadAddress();
  const CtlRun run = RunCtl(dead + "," + leader.address(), "pipeline list");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("p-of-leader"), std::string::npos) << run.output;

  // Every daemon down: the failure names them all.
  const std::string dead2 = DeadAddress();
  const CtlRun none = RunCtl(dead + "," + dead2, "pipeline list");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("(asked " + dead + ", " + dead2 + ")"), std::string::npos)
      << none.output;
}

TEST(HaClients, CtlSavepointStreamFollowsTheLeader) {
  FakeHaDaemon leader("leader", Role::kLeader, 7);
  FakeHaDaemon standby("standby", Role::kStandby, 7);
  standby.set_leader_hint(leader.address());
  const CtlRun run = RunCtl(standby.address(), "savepoint --job job -o json");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("mem://savepoint-5"), std::string::npos) << run.output;
  EXPECT_EQ(standby.admin_calls(), 1);
  EXPECT_EQ(leader.admin_calls(), 1);
}

TEST(HaClients, CtlStatusReportsTheStandbyItAsked) {
  FakeHaDaemon leader("leader", Role::kLeader, 9);
  FakeHaDaemon standby("standby", Role::kStandby, 9);
  standby.set_leader_hint(leader.address());
  const CtlRun table = RunCtl(standby.address(), "status");
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("at " + standby.address() + ": standby"), std::string::npos)
      << table.output;
  EXPECT_NE(table.output.find("standby; leader is " + leader.address()), std::string::npos)
      << table.output;
  EXPECT_NE(table.output.find("leader epoch 9"), std::string::npos) << table.output;

  const CtlRun json = RunCtl(standby.address(), "status -o json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const nlohmann::json parsed = nlohmann::json::parse(json.output);
  EXPECT_EQ(parsed["daemon"]["role"], "standby");
  EXPECT_EQ(parsed["daemon"]["leader_address"], leader.address());
  EXPECT_EQ(parsed["daemon"]["leader_epoch"], 9);
  EXPECT_FALSE(parsed.contains("pipelines"));
  EXPECT_EQ(standby.admin_calls() + leader.admin_calls(), 0) << "status lists no pipelines here";
  EXPECT_EQ(leader.status_calls(), 0) << "status reports the daemon it asked, not the leader";

  const CtlRun of_leader = RunCtl(leader.address(), "status -o json");
  ASSERT_EQ(of_leader.exit_code, 0) << of_leader.output;
  const nlohmann::json leader_json = nlohmann::json::parse(of_leader.output);
  EXPECT_EQ(leader_json["daemon"]["role"], "leader");
  EXPECT_EQ(leader_json["pipelines"].size(), 1u);
}

TEST(HaClients, SimulatorCreatesAtTheLeaderAndReportsTheRedirects) {
  FakeHaDaemon leader("leader", Role::kLeader, 4);
  FakeHaDaemon standby("standby", Role::kStandby, 4);
  standby.set_leader_hint(leader.address());
  const std::string command = std::string(CKPT_SIM_PATH) + " --server " + DeadAddress() + "," +
                              standby.address() +
                              " --job job --create --duration 300ms --json 2>/dev/null";
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  const nlohmann::json report = nlohmann::json::parse(output);
  EXPECT_EQ(report["connects"], 1);
  EXPECT_EQ(report["leader_redirects"], 1);
  EXPECT_EQ(report["stale_messages"], 0);
  // CreatePipeline went to the leader too, after the dead address and the standby's refusal.
  EXPECT_EQ(standby.admin_calls(), 1);
  EXPECT_EQ(leader.admin_calls(), 1);
}

// A worker that records what its handlers were given.
struct RecordingWorker {
  explicit RecordingWorker(sdk::WorkerRuntime& runtime) {
    sdk::PipelineHandlers handlers;
    handlers.on_welcome = [this](const sdk::Welcome& w) {
      std::lock_guard<std::mutex> lock(mu);
      welcome_epochs.push_back(w.leader_epoch);
    };
    handlers.on_trigger = [this](const sdk::Trigger& t) {
      std::lock_guard<std::mutex> lock(mu);
      triggers.push_back(t.checkpoint_id);
    };
    worker = runtime.AddPipeline({.worker_id = "w",
                                  .job_id = "job",
                                  .pipeline_id = "p",
                                  .task_ids = {"0"},
                                  .backoff_initial = milliseconds(10),
                                  .backoff_max = milliseconds(50)},
                                 std::move(handlers));
    worker->Start();
  }
  std::vector<int64_t> Triggers() {
    std::lock_guard<std::mutex> lock(mu);
    return triggers;
  }
  std::vector<int64_t> WelcomeEpochs() {
    std::lock_guard<std::mutex> lock(mu);
    return welcome_epochs;
  }
  std::mutex mu;
  std::vector<int64_t> triggers;        // guarded by mu
  std::vector<int64_t> welcome_epochs;  // guarded by mu
  std::shared_ptr<sdk::PipelineWorker> worker;
};

TEST(HaClients, SdkFollowsTheLeaderAcrossAFailoverAndDropsStaleTriggers) {
  auto old_leader = std::make_unique<FakeHaDaemon>("old", Role::kLeader, 9);
  FakeHaDaemon standby("standby", Role::kStandby, 9);
  standby.set_leader_hint(old_leader->address());
  const std::string dead = DeadAddress();

  sdk::WorkerRuntime runtime(dead + "," + standby.address());
  RecordingWorker w(runtime);
  ASSERT_TRUE(Eventually([&] { return w.worker->counters().connects == 1; }));
  EXPECT_EQ(w.worker->counters().leader_redirects, 1u);
  EXPECT_EQ(old_leader->welcomed_hellos().size(), 1u);

  // The leader goes; the standby now names the new one, of a higher epoch, which still sends a
  // trigger stamped with the old epoch (as if relayed late) before one of its own.
  FakeHaDaemon new_leader("new", Role::kLeader, 10);
  new_leader.set_triggers({{41, 9}, {42, 10}});
  standby.set_leader_hint(new_leader.address());
  old_leader->Shutdown();

  ASSERT_TRUE(Eventually([&] { return w.Triggers().size() == 1; }));
  const sdk::PipelineWorkerCounters counters = w.worker->counters();
  EXPECT_EQ(counters.connects, 2u);
  EXPECT_EQ(counters.reconnects, 1u);
  EXPECT_EQ(counters.leader_redirects, 2u);
  EXPECT_EQ(counters.stale_messages, 1u);
  EXPECT_EQ(w.Triggers(), std::vector<int64_t>{42}) << "the epoch-9 trigger must be dropped";
  EXPECT_EQ(w.WelcomeEpochs(), (std::vector<int64_t>{9, 10}));
  // The worker kept its tasks: it took them over at the new leader, and was never stopped.
  EXPECT_EQ(new_leader.welcomed_hellos(), std::vector<bool>{true});
  EXPECT_FALSE(w.worker->IsStopped());
  w.worker->Goodbye(milliseconds(2000));
  EXPECT_TRUE(w.worker->WaitUntilStopped(std::chrono::steady_clock::now() + milliseconds(5000)));
}

TEST(HaClients, SdkFollowsAtMostThreeRedirectsInARowThenTheList) {
  std::vector<std::unique_ptr<FakeHaDaemon>> standbys;
  for (int i = 0; i < 5; ++i) {
    standbys.push_back(std::make_unique<FakeHaDaemon>("s" + std::to_string(i), Role::kStandby, 3));
  }
  for (int i = 0; i + 1 < 5; ++i) standbys[i]->set_leader_hint(standbys[i + 1]->address());
  FakeHaDaemon leader("leader", Role::kLeader, 3);

  sdk::WorkerRuntime runtime(standbys[0]->address() + "," + leader.address());
  RecordingWorker w(runtime);
  ASSERT_TRUE(Eventually([&] { return w.worker->counters().connects == 1; }));
  EXPECT_EQ(w.worker->counters().leader_redirects, 3u);
  EXPECT_EQ(standbys[4]->connects(), 0) << "a fourth redirect in a row was followed";
  EXPECT_EQ(leader.welcomed_hellos().size(), 1u);
}

TEST(HaClients, SdkRefusesABadServerList) {
  EXPECT_THROW(sdk::WorkerRuntime("127.0.0.1:1,,127.0.0.1:2"), std::invalid_argument);
  EXPECT_THROW(sdk::WorkerRuntime("127.0.0.1:1,127.0.0.1:1"), std::invalid_argument);
}

}  // namespace
}  // namespace ckpt::testing
