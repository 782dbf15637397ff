#pragma once
// EtcdElection: this daemon's candidacy under store.etcd.prefix (docs/DESIGN.md "Beyond one
// machine"). It grants a lease of election_ttl_ms (whole seconds), writes its candidate key
// P/election/<lease> with its `advertise` address, attached to the lease, and keeps the lease
// alive. The candidate whose key was created first leads; the leader key's create revision is
// the leadership's epoch and the fence of every write (etcd_backend.h).
//
// Who leads is ha/election_rules.h's rule, over the oldest keys under P/election/: keys no ckptd
// could have written (no lease, a value that is not a leader address) are ignored, with one
// warning each, so that a foreign key cannot keep the group from electing a leader.
//
// The local lease deadline (ha/lease_deadline.h, the one the daemon's leadership holds): each
// keepalive is timed from when it was SENT, so the deadline (send time + the TTL etcd answered -
// a margin) is never later than etcd's own expiry, however long the answer took. Past it the
// leader sends workers nothing (ha/leadership.h), and the store writes nothing.
//
// Events (callbacks, on the election's own thread; they must not block for long):
// - on_leader_seen(address, epoch): who leads, as seen now ("" and 0: nobody).
// - on_elected(leader_key, epoch): this daemon leads. Called once.
// - on_lost(why): a leader's lease or key is gone. The daemon must stop at once (exit non-zero).
// - on_deadline(time): the local lease deadline moved.
// A standby whose lease lapsed (etcd unreachable for longer than the TTL) campaigns again with a
// new one; a leader never does.
//
// Threading: Start spawns the thread; Stop (any thread but the callbacks') ends it, revoking the
// lease so that a standby takes over at once after a clean shutdown.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <set>
#include <utility>

#include "common/lease_clock.h"
#include "common/mutex.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_layout.h"
#include "ha/lease_deadline.h"

namespace ckpt {

struct ElectionCallbacks {
  std::function<void(const std::string& address, int64_t epoch)> on_leader_seen;
  std::function<void(const std::string& leader_key, int64_t epoch)> on_elected;
  std::function<void(const std::string& why)> on_lost;
  std::function<void(LeaseClock::time_point)> on_deadline;
};

class EtcdElection {
 public:
  // `deadline`: where the lease's deadline is kept (the daemon's Leadership::lease(), which
  // the sessions and the store read); null: one of the election's own.
  EtcdElection(std::shared_ptr<EtcdClient> client, std::string advertise,
               ElectionCallbacks callbacks, LeaseDeadline* deadline = nullptr);
  ~EtcdElection();
  EtcdElection(const EtcdElection&) = delete;
  EtcdElection& operator=(const EtcdElection&) = delete;

  void Start();
  // Ends the thread, and the lease is no longer confirmed (LeaseConfirmed: false from now on, so
  // the store sends nothing more); the lease itself still stands in etcd until it expires.
  void StopConfirming();
  // StopConfirming; with `resign`, also revokes the lease (its key goes, a standby leads next).
  // A write still in flight then would fail its fence and stop the daemon: let the store finish
  // its batches between StopConfirming and this.
  void Stop(bool resign);

  // Whether the lease is confirmed now: the local deadline has not passed. Any thread.
  bool LeaseConfirmed() const { return deadline_.Confirmed(); }

  // The lease's TTL as granted, in seconds (election_ttl_ms rounded up, at least 2).
  int64_t ttl_seconds() const { return ttl_seconds_; }

 private:
  void Run();
  // One step of the loop; returns how long to wait before the next.
  std::chrono::milliseconds Step();
  bool Campaign();
  void KeepAlive();
  void Observe();
  void Wait(std::chrono::milliseconds how_long);
  // One warning per key (and value) the election rule passes over.
  void WarnIgnored(const std::string& key, int64_t mod_revision, const std::string& why);

  const std::shared_ptr<EtcdClient> client_;
  const etcd::Layout layout_;
  const std::string advertise_;
  const ElectionCallbacks callbacks_;
  const int64_t ttl_seconds_;
  const std::chrono::milliseconds keepalive_every_;
  const std::chrono::milliseconds observe_every_;
  const std::chrono::milliseconds margin_;
  const std::chrono::milliseconds call_timeout_;

  // The election thread's own (no other thread reads them).
  int64_t lease_id_ = 0;
  std::string my_key_;
  int64_t my_revision_ = 0;
  bool leading_ = false;
  bool lost_ = false;
  LeaseClock::time_point next_keepalive_;
  std::string last_seen_address_;
  int64_t last_seen_epoch_ = -1;
  int failures_in_a_row_ = 0;

  // Election thread only: the ignored keys already warned about (key, mod revision), bounded.
  std::set<std::pair<std::string, int64_t>> warned_;
  // Election thread only: the look gave up after its last page without a candidate, said once
  // until a look sees a leader again.
  bool said_pages_without_candidate_ = false;

  LeaseDeadline own_deadline_;  // used when the constructor is given none
  LeaseDeadline& deadline_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ CKPT_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ckpt
