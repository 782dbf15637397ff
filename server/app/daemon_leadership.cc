// Daemon with the etcd backend (docs/DESIGN.md, "High availability"): StartCampaign opens the etcd
// store (a standby keeps a warm copy of the prefix) and starts the election, whose callbacks follow
// the leader and the lease's deadline; TakeOver, once elected, fences the store, checks the txn
// limit, loads the declared pipelines and serves (ha/takeover.h holds the sequence). A lost
// leadership ends the process (ha/exit_policy.h): never back to standby in-process.
//
// Threading: StartCampaign on the controlling thread, within Start. The election's callbacks run
// on its thread; TakeOver runs on takeover_thread_, which Shutdown joins.
#include <spdlog/spdlog.h>

#include <thread>

#include "app/daemon.h"
#include "app/daemon_internal.h"
#include "common/exit_codes.h"
#include "core/printable.h"
#include "etcd/etcd_election.h"
#include "etcd/etcd_store.h"
#include "ha/exit_policy.h"
#include "ha/takeover.h"

namespace ckpt {

using daemon_internal::kReloadWait;

Status Daemon::StartCampaign() {
  auto client = EtcdClient::Create(config_.etcd);
  if (!client.ok()) return client.status();
  std::shared_ptr<EtcdClient> etcd = std::move(*client);
  if (!etcd->WaitConnected(std::chrono::milliseconds(config_.etcd.dial_timeout_ms))) {
    // Not fatal: the campaign retries until etcd answers, as a standby that says why.
    spdlog::warn("etcd {} not reachable within dial_timeout_ms {}; standing by and retrying",
                 etcd->endpoints_text(), config_.etcd.dial_timeout_ms);
  }
  leadership_.StandBy();
  metrics_.role = 2;
  ElectionCallbacks callbacks;
  callbacks.on_leader_seen = [this](const std::string& address, int64_t epoch) {
    if (leadership_.role() != Leadership::Role::kStandby) return;
    metrics_.leader_epoch = epoch;
    if (!leadership_.SetLeaderSeen(address, epoch)) {
      // The election rule passes such keys over, so this is a belt to its braces: no client is
      // sent there, and the trailer is left out (ha/leadership.h).
      spdlog::warn(
          "etcd: the leader (epoch {}) advertises {}, which is no address a client can be "
          "sent to; clients are told no leader until it changes",
          epoch, Printable(address));
    } else if (address.empty()) {
      spdlog::info("etcd: no leader now; campaigning");
    } else {
      spdlog::info("etcd: {} leads (epoch {}); standing by", address, epoch);
    }
  };
  callbacks.on_deadline = [this](LeaseClock::time_point until) {
    metrics_.lease_deadline_ns = until.time_since_epoch().count();  // the deadline is the lease's
  };
  callbacks.on_elected = [this](const std::string& key, int64_t epoch) {
    // Off the election's thread, which must keep the lease alive while the load runs.
    MutexLock lock(takeover_mu_);
    if (shutting_down_) return;
    takeover_thread_ = std::thread([this, key, epoch] { TakeOver(key, epoch); });
  };
  // Never back to standby in-process: stop at once; systemd starts a standby.
  callbacks.on_lost = [](const std::string& why) { ExitFor(EtcdOutcome::kFencedOut, why); };
  election_ = std::make_unique<EtcdElection>(etcd, config_.advertise, std::move(callbacks),
                                             &leadership_.lease());
  GroupCommitOptions store_options;
  store_options.writer_nice = config_.store_writer_nice;
  auto store = EtcdStore::Create(
      etcd, [this] { return leadership_.lease().Confirmed(); }, std::move(store_options));
  // Until it leads: a copy of the prefix kept warm by a watch, for a quick takeover.
  store->backend().StartWarming();
  etcd_store_ = store.get();
  store_ = std::move(store);
  return Status::Ok();
}

void Daemon::TakeOver(const std::string& leader_key, int64_t epoch) {
  const auto began = std::chrono::steady_clock::now();
  MutexLock declared_lock(declared_mu_);  // a reload meanwhile waits, then applies to these
  TakeoverSteps steps;
  // Every write from here on carries the fence; the load reads at a revision after the leader
  // key's creation (a linearizable range), so it sees every write of earlier leaders.
  steps.fence = [&] { etcd_store_->backend().SetFence(leader_key, epoch); };
  // A setting above what the members take would have etcd refuse every full batch; found here
  // it is a configuration error, said before serving.
  steps.check = [&] { return etcd_store_->backend().CheckTxnLimit(); };
  steps.load = [&] {
    declared_mu_.AssertHeld();  // taken above, for the whole sequence
    return host_->Load(declared_, declared_restore_from_, declared_groups_, kReloadWait);
  };
  // Loaded runners bumped their generations and reserve fresh id blocks before their first
  // trigger (restart semantics): from now on this daemon serves.
  steps.serve = [&] {
    leadership_.BecomeLeader(config_.advertise, epoch);
    metrics_.role = 1;
    metrics_.leader_epoch = epoch;
    ready_ = true;
    UpdateHealthService();
  };
  RunTakeover(steps);
  spdlog::info("leading as epoch {}: {} pipeline(s) loaded in {} ms; serving on port {}", epoch,
               host_->registry().size(),
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - began)
                   .count(),
               grpc_port_);
}

}  // namespace ckpt
