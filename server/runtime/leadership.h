#pragma once
// Leadership: the role this daemon plays (SINGLE with the embedded store; STANDBY, then LEADER,
// with store.backend etcd), who leads and under which epoch (for GetDaemonStatus, the
// `ckpt-leader` trailer and the epoch stamped on welcome and trigger), and the local lease
// deadline past which a leader sends workers nothing (CONTRACT.md "High availability").
//
// A daemon never steps down in-process: STANDBY -> LEADER once, and leaving LEADER is exiting.
//
// Threading: every method is safe from any thread. The role and the deadline are atomics read
// on every message sent to a worker; the leader's address is under a mutex.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/lease_clock.h"
#include "common/mutex.h"

namespace ckpt {

class Leadership {
 public:
  enum class Role { kSingle, kStandby, kLeader };

  struct View {
    Role role = Role::kSingle;
    std::string leader_address;  // "" while none is known (and with the embedded store)
    int64_t epoch = 0;           // 0 with the embedded store
  };

  // Starts as kSingle; a daemon on etcd calls StandBy before it serves.
  Leadership() = default;

  void StandBy() { role_.store(Role::kStandby); }
  // What a standby sees of the current leader (address "" and epoch 0: none now).
  void SetLeaderSeen(std::string address, int64_t epoch) {
    MutexLock lock(mu_);
    leader_address_ = std::move(address);
    epoch_.store(epoch);
  }
  // This daemon leads from now on, under `epoch`, reachable at `address`.
  void BecomeLeader(std::string address, int64_t epoch) {
    {
      MutexLock lock(mu_);
      leader_address_ = std::move(address);
      epoch_.store(epoch);
    }
    role_.store(Role::kLeader);
  }
  // The local lease deadline: the last keepalive's send time plus the lease's TTL, less a margin
  // (etcd_election.h), on the clock that counts a suspend. Only ever moved forward by the
  // election's thread.
  void ExtendSendDeadline(LeaseClock::time_point until) {
    send_deadline_ns_.store(until.time_since_epoch().count());
  }

  View view() const {
    View v;
    v.role = role_.load();
    MutexLock lock(mu_);
    v.leader_address = leader_address_;
    v.epoch = epoch_.load();
    return v;
  }
  Role role() const { return role_.load(); }
  bool serving() const { return role_.load() != Role::kStandby; }
  int64_t epoch() const { return epoch_.load(); }
  // Whether a message may go to a worker now: always with the embedded store; a leader only
  // before its local lease deadline; a standby never.
  bool MaySendToWorkers() const {
    switch (role_.load()) {
      case Role::kSingle: return true;
      case Role::kStandby: return false;
      case Role::kLeader:
        return LeaseClock::now().time_since_epoch().count() < send_deadline_ns_.load();
    }
    return false;
  }

 private:
  std::atomic<Role> role_{Role::kSingle};
  std::atomic<int64_t> epoch_{0};
  std::atomic<int64_t> send_deadline_ns_{0};
  mutable Mutex mu_;
  std::string leader_address_ CKPT_GUARDED_BY(mu_);
};

}  // namespace ckpt
