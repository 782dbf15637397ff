#pragma once
// EtcdCluster: Debian's etcd (/usr/bin/etcd) on free loopback ports in a temp dir, one member or
// three, for the tests of the etcd backend and the election. Each member is its own process
// (its log in <dir>/<name>.log); the destructor kills them all and removes the dir.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/scoped_temp_dir.h"

namespace ckpt::testing {

class EtcdCluster {
 public:
  // Starts `members` members, each also given `extra_args` (etcd flags), and waits until the
  // cluster answers a write (or throws std::runtime_error naming the log to read).
  explicit EtcdCluster(int members = 1, std::vector<std::string> extra_args = {});
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // http://127.0.0.1:PORT of every member.
  std::vector<std::string> endpoints() const;
  // SIGKILLs member `i` (it stays down until Restart).
  void Kill(int i);
  // Starts member `i` again on its data dir; returns at once.
  void Restart(int i);
  // SIGSTOPs member `i`: it keeps its connections (the kernel even takes new ones) and answers
  // nothing, like a hung process or a paused host. Resume (SIGCONT) lets it go on.
  void Pause(int i);
  void Resume(int i);
  // Whether a write through every running member's endpoints succeeds within `timeout`.
  bool WaitWritable(std::chrono::milliseconds timeout) const;

  static bool Installed();

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };
  void Spawn(Member& m, bool fresh);

  ScopedTempDir dir_{"ckptd-etcd"};
  std::vector<Member> members_;
  std::string initial_cluster_;
  std::vector<std::string> extra_args_;
};

}  // namespace ckpt::testing
