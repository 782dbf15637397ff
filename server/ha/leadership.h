#pragma once
// Leadership: the role this daemon plays (SINGLE with the embedded store; STANDBY, then LEADER,
// with store.backend etcd), who leads and under which epoch (for GetDaemonStatus, the
// `ckpt-leader` trailer and the epoch stamped on welcome and trigger), and the lease deadline
// (ha/lease_deadline.h) past which a leader sends workers nothing (docs/PROTOCOL.md "High
// availability").
//
// A daemon never steps down in-process: STANDBY -> LEADER once, and leaving LEADER is exiting
// (ha/exit_policy.h).
//
// Threading: every method is safe from any thread. The role and the deadline are atomics read
// on every message sent to a worker; the leader's address is under a mutex.

#include <atomic>
#include <cstdint>
#include <string>

#include "common/host_port.h"
#include "common/mutex.h"
#include "ha/lease_deadline.h"

namespace ckpt {

class Leadership {
 public:
  enum class Role { kSingle, kStandby, kLeader };

  struct View {
    Role role = Role::kSingle;
    // A legal leader address (common/host_port.h CheckLeaderAddress), or "" while none is known
    // (and with the embedded store).
    std::string leader_address;
    int64_t epoch = 0;  // 0 with the embedded store
    // A leader is known, but its address is not one a client could be sent to (so
    // leader_address is ""): the `ckpt-leader` trailer is left out.
    bool leader_address_unusable = false;
  };

  // Starts as kSingle; a daemon on etcd calls StandBy before it serves.
  Leadership() = default;

  void StandBy() { role_.store(Role::kStandby); }
  // What a standby sees of the current leader ("" and epoch 0: none now). An address that is not
  // a legal leader address is kept as "", marked unusable (no client can be sent there, and it
  // could not go into a header); false then.
  bool SetLeaderSeen(std::string address, int64_t epoch) {
    const bool legal = address.empty() || CheckLeaderAddress(address).ok();
    MutexLock lock(mu_);
    leader_address_ = legal ? std::move(address) : std::string();
    leader_address_unusable_ = !legal;
    epoch_.store(epoch);
    return legal;
  }
  // This daemon leads from now on, under `epoch`, reachable at `address` (its `advertise`, legal
  // since the config was read).
  void BecomeLeader(std::string address, int64_t epoch) {
    {
      MutexLock lock(mu_);
      leader_address_ = std::move(address);
      leader_address_unusable_ = false;
      epoch_.store(epoch);
    }
    role_.store(Role::kLeader);
  }

  // The lease deadline: the election writes it, everything acting under the lease reads it.
  LeaseDeadline& lease() { return lease_; }
  const LeaseDeadline& lease() const { return lease_; }

  View view() const {
    View v;
    v.role = role_.load();
    MutexLock lock(mu_);
    v.leader_address = leader_address_;
    v.leader_address_unusable = leader_address_unusable_;
    v.epoch = epoch_.load();
    return v;
  }
  Role role() const { return role_.load(); }
  bool serving() const { return role_.load() != Role::kStandby; }
  int64_t epoch() const { return epoch_.load(); }
  // Whether a message may go to a worker now: always with the embedded store; a leader only
  // while its lease is confirmed; a standby never.
  bool MaySendToWorkers() const {
    switch (role_.load()) {
      case Role::kSingle: return true;
      case Role::kStandby: return false;
      case Role::kLeader: return lease_.Confirmed();
    }
    return false;
  }

 private:
  std::atomic<Role> role_{Role::kSingle};
  std::atomic<int64_t> epoch_{0};
  LeaseDeadline lease_;
  mutable Mutex mu_;
  std::string leader_address_ CKPT_GUARDED_BY(mu_);
  bool leader_address_unusable_ CKPT_GUARDED_BY(mu_) = false;
};

}  // namespace ckpt
