#include "support/etcd_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "etcd/etcd_client.h"

namespace ckpt::testing {
namespace {

constexpr const char* kEtcd = "/usr/bin/etcd";

// A port the kernel just handed out: free unless another process takes it in between.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("no free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

std::string Url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

}  // namespace

bool EtcdCluster::Installed() { return access(kEtcd, X_OK) == 0; }

EtcdCluster::EtcdCluster(int members, std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)) {
  for (int i = 0; i < members; ++i) {
    Member m;
    m.name = "m" + std::to_string(i);
    m.client_port = FreePort();
    m.peer_port = FreePort();
    initial_cluster_ += (i ? "," : "") + m.name + "=" + Url(m.peer_port);
    members_.push_back(m);
  }
  for (Member& m : members_) Spawn(m, /*fresh=*/true);
  if (!WaitWritable(std::chrono::seconds(30))) {
    // The destructor does not run for a constructor that throws: stop them here, and keep what
    // the first member said (its dir goes with this object).
    std::ifstream log(dir_.path() / (members_.front().name + ".log"));
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    if (text.size() > 4000) text = text.substr(text.size() - 4000);
    for (size_t i = 0; i < members_.size(); ++i) Kill(static_cast<int>(i));
    throw std::runtime_error("etcd did not become writable within 30 s; its log ends:\n" + text);
  }
}

EtcdCluster::~EtcdCluster() {
  for (Member& m : members_) Kill(static_cast<int>(&m - members_.data()));
}

void EtcdCluster::Spawn(Member& m, bool fresh) {
  const std::string data = (dir_.path() / m.name).string();
  const std::string log = (dir_.path() / (m.name + ".log")).string();
  std::vector<std::string> args = {
      kEtcd, "--name", m.name, "--data-dir", data, "--listen-client-urls", Url(m.client_port),
      "--advertise-client-urls", Url(m.client_port), "--listen-peer-urls", Url(m.peer_port),
      "--initial-advertise-peer-urls", Url(m.peer_port), "--initial-cluster", initial_cluster_,
      "--initial-cluster-state", fresh ? "new" : "existing", "--initial-cluster-token",
      dir_.path().filename().string(),
      // Short elections: a member lost is replaced fast.
      "--heartbeat-interval", "50", "--election-timeout", "500", "--auto-compaction-mode",
      "revision", "--auto-compaction-retention", "10000"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // The child: only its log as stdout/stderr, no descriptor of the test process (gRPC's
    // sockets and pipes), default signal handling.
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    for (int i = 3; i < 4096; ++i) close(i);
    // Dies with the test program, however that ends (a crash, a timeout's SIGKILL).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(kEtcd, argv.data());
    _exit(127);
  }
  m.pid = pid;
}

void EtcdCluster::Kill(int i) {
  Member& m = members_.at(static_cast<size_t>(i));
  if (m.pid <= 0) return;
  kill(m.pid, SIGKILL);
  waitpid(m.pid, nullptr, 0);
  m.pid = -1;
}

void EtcdCluster::Pause(int i) {
  const Member& m = members_.at(static_cast<size_t>(i));
  if (m.pid > 0) kill(m.pid, SIGSTOP);
}

void EtcdCluster::Resume(int i) {
  const Member& m = members_.at(static_cast<size_t>(i));
  if (m.pid > 0) kill(m.pid, SIGCONT);
}

void EtcdCluster::Restart(int i) {
  Member& m = members_.at(static_cast<size_t>(i));
  if (m.pid > 0) return;
  // A member that ran once rejoins from its data dir (etcd then ignores the initial-cluster flags).
  Spawn(m, /*fresh=*/false);
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (const Member& m : members_) out.push_back(Url(m.client_port));
  return out;
}

bool EtcdCluster::WaitWritable(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // First until every running member accepts connections: a gRPC channel that met a refused
  // connection backs off for seconds before it tries again.
  for (const Member& m : members_) {
    while (m.pid > 0 && !Accepts(m.client_port)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EtcdSettings settings;
  for (const Member& m : members_) {
    if (m.pid > 0) settings.endpoints.push_back(Url(m.client_port));
  }
  settings.request_timeout_ms = 1000;
  auto client = EtcdClient::Create(settings);
  if (!client.ok()) return false;
  while (std::chrono::steady_clock::now() < deadline) {
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key("/etcd-cluster-ready");
    put->set_value("1");
    etcdserverpb::TxnResponse response;
    EtcdError error;
    if ((*client)->Txn(txn, &response, &error)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace ckpt::testing
