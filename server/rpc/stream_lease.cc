#include "rpc/stream_lease.h"

#include <boost/asio/post.hpp>

namespace ckpt {

namespace asio = boost::asio;
using Steady = DaemonClock;  // leases and the hello timeout: the clock tests may move

StreamLease::StreamLease(asio::io_context& io, std::chrono::milliseconds lease_ttl,
                         std::chrono::milliseconds hello_timeout)
    : lease_ttl_(lease_ttl),
      hello_timeout_(hello_timeout),
      strand_(asio::make_strand(io)),
      timer_(strand_) {}

void StreamLease::Start(const std::shared_ptr<Owner>& owner) {
  Touch();
  ArmAt(owner, created_at_ + hello_timeout_);
}

bool StreamLease::Greet(const std::shared_ptr<Owner>& owner) {
  if (greeted_.exchange(true)) return false;
  ArmAt(owner, Steady::now() + lease_ttl_);
  return true;
}

void StreamLease::Cancel(const std::shared_ptr<Owner>& owner) {
  asio::post(strand_, [this, owner] {
    if (owner) timer_.cancel();  // owner: the lease's memory lives until this has run
  });
}

int64_t StreamLease::LastActivityWallMs() const {
  const Steady::time_point last{Steady::duration(last_activity_.load())};
  const int64_t age_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - last).count();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() -
         age_ms;
}

void StreamLease::ArmAt(std::shared_ptr<Owner> owner, Steady::time_point at) {
  asio::post(strand_, [this, owner = std::move(owner), at] {
    if (owner->LeaseOver()) return;
    timer_.expires_at(at);
    timer_.async_wait([this, owner](const boost::system::error_code& ec) {
      if (!ec && !owner->LeaseOver()) OnDue(owner);
    });
  });
}

void StreamLease::OnDue(const std::shared_ptr<Owner>& owner) {
  const bool greeted = greeted_.load();
  const Steady::time_point last{Steady::duration(last_activity_.load())};
  const Steady::time_point expiry = greeted ? last + lease_ttl_ : created_at_ + hello_timeout_;
  if (Steady::now() < expiry) {
    ArmAt(owner, expiry);  // activity since: look again when the renewed lease ends
    return;
  }
  if (!greeted) {
    owner->NoHelloInTime(hello_timeout_);
    return;
  }
  Status expired = owner->LeaseExpired(lease_ttl_);
  timer_.expires_after(kStuckWriteGrace);
  timer_.async_wait([owner, expired = std::move(expired)](const boost::system::error_code& ec) {
    if (!ec && !owner->LeaseOver()) owner->EndNotWritten(expired);
  });
}

}  // namespace ckpt
