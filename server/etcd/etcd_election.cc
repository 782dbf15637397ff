#include "etcd/etcd_election.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>

#include "core/printable.h"
#include "ha/election_rules.h"

namespace ckpt {

using Clock = LeaseClock;  // the lease's deadline goes on through a suspend (common/lease_clock.h)
using std::chrono::milliseconds;

namespace {

int64_t TtlSeconds(int64_t election_ttl_ms) {
  return std::max<int64_t>(2, (election_ttl_ms + 999) / 1000);
}

// A look reads the keys under election/ oldest first, a page at a time, until it meets a
// candidate: ckptd's own candidates are a handful, and keys written by something else are passed
// over. Past kPagesRead pages of keys that are no candidate it gives up for this look (and says
// so): the prefix needs cleaning, and a look must stay cheap.
constexpr int64_t kCandidatesPerPage = 64;
constexpr int kPagesRead = 16;
// Warnings about ignored keys remembered (so that each is logged once), at most: above what one
// look can read, so that a look never warns about the same key twice.
constexpr size_t kWarnedKept = static_cast<size_t>(4 * kCandidatesPerPage * kPagesRead);

}  // namespace

EtcdElection::EtcdElection(std::shared_ptr<EtcdClient> client, std::string advertise,
                           ElectionCallbacks callbacks, LeaseDeadline* deadline)
    : client_(std::move(client)),
      layout_(client_->settings().prefix),
      advertise_(std::move(advertise)),
      callbacks_(std::move(callbacks)),
      ttl_seconds_(TtlSeconds(client_->settings().election_ttl_ms)),
      // Three keepalives per TTL: one lost or slow answer does not cost the lease.
      keepalive_every_(ttl_seconds_ * 1000 / 3),
      // A standby notices a vanished leader key within this (its takeover's added latency).
      observe_every_(milliseconds(200)),
      // The local deadline ends this much before etcd's expiry could: clocks run at slightly
      // different rates, and etcd counts from when it received the keepalive (after we sent it).
      margin_(std::max<int64_t>(200, ttl_seconds_ * 1000 / 10)),
      // A keepalive or a look at the leader key gives up after this (or store.etcd.
      // request_timeout_ms, if shorter): the member asked may have stopped answering, and the
      // client then asks another (etcd_client.h, Reconnecting). A keepalive that hung for the
      // request timeout (5 s by default, the default TTL) would cost the lease. A quarter of the
      // TTL: a keepalive sent a third of the TTL after the last answer, given up, and asked again
      // 250 ms later still leaves its retry at least a quarter of the TTL less the margin to be
      // answered before the local deadline; and a slow but live member (a loaded machine) has
      // this long to answer.
      call_timeout_(std::max<int64_t>(200, ttl_seconds_ * 1000 / 4)),
      deadline_(deadline ? *deadline : own_deadline_) {}

EtcdElection::~EtcdElection() { Stop(false); }

void EtcdElection::Start() {
  thread_ = std::thread([this] { Run(); });
}

void EtcdElection::StopConfirming() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  deadline_.Clear();
}

void EtcdElection::Stop(bool resign) {
  StopConfirming();
  // The election thread has ended: its members are this thread's now.
  if (resign && lease_id_ != 0) {
    // The key goes with the lease: a standby sees it at its next look and takes over now
    // instead of after the TTL.
    if (Status s = client_->LeaseRevoke(lease_id_); !s.ok()) {
      spdlog::warn(
          "etcd: could not resign (revoke the election lease): {}; a standby takes "
          "over once it expires",
          s.ToString());
    } else {
      spdlog::info("etcd: resigned the election (lease {:x} revoked)", lease_id_);
    }
    lease_id_ = 0;
  }
}

void EtcdElection::Run() {
  while (true) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
    }
    Wait(Step());
  }
}

void EtcdElection::Wait(milliseconds how_long) {
  MutexLock lock(mu_);
  cv_.WaitFor(lock, how_long, [this]() CKPT_REQUIRES(mu_) { return stopping_; });
}

milliseconds EtcdElection::Step() {
  if (lost_) return milliseconds(1000);  // the daemon is exiting
  if (lease_id_ == 0 && !Campaign()) {
    ++failures_in_a_row_;
    const milliseconds retry(std::min<int64_t>(5000, int64_t{250} * failures_in_a_row_));
    return retry;
  }
  if (Clock::now() >= next_keepalive_) KeepAlive();
  if (lease_id_ != 0 && !lost_) Observe();
  const auto until_keepalive =
      std::chrono::duration_cast<milliseconds>(next_keepalive_ - Clock::now());
  return std::clamp(until_keepalive, milliseconds(10), observe_every_);
}

bool EtcdElection::Campaign() {
  const auto sent = Clock::now();
  auto grant = client_->LeaseGrant(ttl_seconds_);
  if (!grant.ok()) {
    if (failures_in_a_row_ % 20 == 0) {
      spdlog::error("etcd: cannot campaign ({}); retrying", grant.status().ToString());
    }
    return false;
  }
  lease_id_ = grant->id();
  deadline_.Set(sent + milliseconds(grant->ttl() * 1000) - margin_);
  my_key_ = layout_.ElectionKey(lease_id_);
  etcdserverpb::TxnRequest txn;
  auto* absent = txn.add_compare();
  absent->set_key(my_key_);
  absent->set_target(etcdserverpb::Compare::CREATE);
  absent->set_result(etcdserverpb::Compare::EQUAL);
  absent->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(my_key_);
  put->set_value(advertise_);
  put->set_lease(lease_id_);
  auto* get = txn.add_failure()->mutable_request_range();
  get->set_key(my_key_);
  etcdserverpb::TxnResponse response;
  EtcdError error;
  if (!client_->Txn(txn, &response, &error)) {
    // Perhaps written, perhaps not: the lease is ours alone, so the next attempt starts over with
    // a new one and this one expires with whatever key it holds.
    spdlog::warn("etcd: writing the candidate key failed ({}); campaigning again",
                 error.status.ToString());
    lease_id_ = 0;
    return false;
  }
  // Our own put's revision is the create revision of the new key.
  my_revision_ =
      response.succeeded()
          ? response.header().revision()
          : (response.responses_size() > 0 && response.responses(0).response_range().kvs_size() > 0
                 ? response.responses(0).response_range().kvs(0).create_revision()
                 : 0);
  failures_in_a_row_ = 0;
  next_keepalive_ = sent + keepalive_every_;
  spdlog::info("etcd: campaigning as {} (lease TTL {} s, revision {}) at {}", my_key_, grant->ttl(),
               my_revision_, client_->endpoints_text());
  return true;
}

void EtcdElection::KeepAlive() {
  const auto sent = Clock::now();
  auto ttl = client_->LeaseKeepAliveOnce(lease_id_, call_timeout_);
  if (!ttl.ok()) {
    ++failures_in_a_row_;
    next_keepalive_ = Clock::now() + milliseconds(250);  // retry soon: the lease is running out
    const bool past = !LeaseConfirmed();
    if (failures_in_a_row_ == 1 || failures_in_a_row_ % 20 == 0) {
      spdlog::warn("etcd: lease keepalive failed ({}); {}", ttl.status().ToString(),
                   past ? "past the local lease deadline: nothing is sent to workers and nothing "
                          "written until etcd answers"
                        : "the lease is still confirmed locally");
    }
    if (!leading_ && sent - deadline_.until() > milliseconds(ttl_seconds_ * 1000)) {
      // A standby's lease has surely expired in etcd by now: campaign again with a new one.
      lease_id_ = 0;
      my_revision_ = 0;
    }
    return;
  }
  if (*ttl <= 0) {
    if (leading_) {
      lost_ = true;
      callbacks_.on_lost("the election lease " + my_key_ +
                         " expired: etcd did not hear from this daemon within its TTL");
      return;
    }
    spdlog::warn("etcd: the standby's election lease expired; campaigning again");
    lease_id_ = 0;
    my_revision_ = 0;
    return;
  }
  if (failures_in_a_row_ > 0) {
    spdlog::info("etcd: lease keepalive answered again after {} failure(s)", failures_in_a_row_);
  }
  failures_in_a_row_ = 0;
  const auto deadline = sent + milliseconds(*ttl * 1000) - margin_;
  deadline_.Set(deadline);
  if (leading_ && callbacks_.on_deadline) callbacks_.on_deadline(deadline);
  next_keepalive_ = sent + keepalive_every_;
}

void EtcdElection::Observe() {
  std::vector<ElectionCandidate> candidates;
  std::unordered_map<std::string, int64_t> mod_revisions;  // of each key read, for its warning
  ElectionOutcome outcome;
  int64_t after_revision = 0;  // pages after the first start above the last key read
  for (int page = 0; page < kPagesRead; ++page) {
    etcdserverpb::RangeRequest request;
    request.set_key(layout_.ElectionPrefix());
    request.set_range_end(PrefixEnd(layout_.ElectionPrefix()));
    request.set_sort_target(etcdserverpb::RangeRequest::CREATE);
    request.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
    request.set_limit(kCandidatesPerPage);
    if (after_revision > 0) request.set_min_create_revision(after_revision + 1);
    auto response = client_->Range(request, call_timeout_);
    if (!response.ok()) return;  // the keepalive's failures say it; the last view stands
    for (const auto& kv : response->kvs()) {
      candidates.push_back({kv.key(), kv.value(), kv.lease(), kv.create_revision()});
      mod_revisions[kv.key()] = kv.mod_revision();
      after_revision = kv.create_revision();
    }
    outcome = PickLeader(candidates, [this](int64_t lease) { return layout_.ElectionKey(lease); });
    if (outcome.leader || !response->more()) break;
    if (page + 1 == kPagesRead && !said_pages_without_candidate_) {
      said_pages_without_candidate_ = true;
      spdlog::error(
          "etcd: the oldest {} keys under {} are none of them an election candidate: no leader "
          "is seen until keys no ckptd wrote are deleted from there",
          candidates.size(), layout_.ElectionPrefix());
    }
  }
  if (outcome.leader) said_pages_without_candidate_ = false;
  for (const auto& [key, why] : outcome.ignored) WarnIgnored(key, mod_revisions[key], why);
  std::string address;
  int64_t epoch = 0;
  std::string leader_key;
  if (outcome.leader) {
    const ElectionCandidate& leader = candidates[*outcome.leader];
    address = leader.value;
    epoch = leader.create_revision;
    leader_key = leader.key;
  }
  if (address != last_seen_address_ || epoch != last_seen_epoch_) {
    last_seen_address_ = address;
    last_seen_epoch_ = epoch;
    if (callbacks_.on_leader_seen) callbacks_.on_leader_seen(address, epoch);
  }
  const bool mine = my_revision_ != 0 && leader_key == my_key_ && epoch == my_revision_;
  if (mine && !leading_ && LeaseConfirmed()) {
    leading_ = true;
    spdlog::info("etcd: elected leader (epoch {}, key {})", epoch, my_key_);
    if (callbacks_.on_deadline) callbacks_.on_deadline(deadline_.until());
    callbacks_.on_elected(my_key_, my_revision_);
  } else if (!mine && leading_) {
    lost_ = true;
    callbacks_.on_lost("the leader key is no longer this daemon's " + my_key_ + " (now " +
                       (leader_key.empty() ? std::string("none") : leader_key) + ", epoch " +
                       std::to_string(epoch) + ")");
  }
}

void EtcdElection::WarnIgnored(const std::string& key, int64_t mod_revision,
                               const std::string& why) {
  if (!warned_.emplace(key, mod_revision).second) return;
  if (warned_.size() > kWarnedKept) warned_.clear();  // a flood of keys: warn about them again
  spdlog::warn("etcd: {} under {} is no election candidate and is ignored: {}", Printable(key),
               layout_.ElectionPrefix(), Printable(why));
}

}  // namespace ckpt
