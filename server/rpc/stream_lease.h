#pragma once
// StreamLease is a worker stream's lease: a Connect stream's (rpc/worker_session.h) or a whole
// Session call's (rpc/session_call.h). The stream is ended when no hello came within
// hello_timeout of its start, or, after one, when nothing came for lease_ttl; an end that is
// still not written a moment after the lease lapsed (a worker frozen mid-read) is then forced,
// so that such a worker cannot keep its slot and its memory until the transport gives up.
//
// Threading: Touch, Greet and LastActivityWallMs from any thread (atomics). The timer lives on
// a strand of its own (strand_), where every wait, its handler and the owner's callbacks run.
// Every wait holds a reference to the owner, which owns the lease: the lease lives as long as
// anything that can still call it.

#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>

#include "common/daemon_clock.h"
#include "common/status.h"

namespace ckpt {

class StreamLease {
 public:
  // What the lease's owner does when the lease says so; called on the lease's strand.
  class Owner {
   public:
    virtual ~Owner() = default;
    // The stream is over: the lease does nothing more.
    virtual bool LeaseOver() const = 0;
    // hello_timeout passed with no hello: end the stream.
    virtual void NoHelloInTime(std::chrono::milliseconds hello_timeout) = 0;
    // lease_ttl passed with nothing read: end the stream; returns the status it ends with.
    virtual Status LeaseExpired(std::chrono::milliseconds lease_ttl) = 0;
    // The end asked for by LeaseExpired is still not written: drop what is queued and cancel.
    virtual void EndNotWritten(Status expired) = 0;
  };

  // How long an end asked for at expiry may take to be written before it is forced.
  static constexpr std::chrono::milliseconds kStuckWriteGrace{500};

  StreamLease(boost::asio::io_context& io, std::chrono::milliseconds lease_ttl,
              std::chrono::milliseconds hello_timeout);

  // Starts the hello timeout (the stream is read from now).
  void Start(const std::shared_ptr<Owner>& owner);
  // Something was read: the lease is renewed.
  void Touch() { last_activity_ = DaemonClock::now().time_since_epoch().count(); }
  // The first hello: the lease, not hello_timeout, counts from now on. True only the first time.
  bool Greet(const std::shared_ptr<Owner>& owner);
  // No more waits (the stream is done).
  void Cancel(const std::shared_ptr<Owner>& owner);
  // Wall-clock ms of the last Touch (or of the start).
  int64_t LastActivityWallMs() const;

 private:
  void ArmAt(std::shared_ptr<Owner> owner, DaemonClock::time_point at);
  void OnDue(const std::shared_ptr<Owner>& owner);

  // Constant after construction.
  const std::chrono::milliseconds lease_ttl_;
  const std::chrono::milliseconds hello_timeout_;
  const DaemonClock::time_point created_at_ = DaemonClock::now();

  std::atomic<bool> greeted_{false};
  std::atomic<DaemonClock::rep> last_activity_{DaemonClock::now().time_since_epoch().count()};

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  // strand_ only; on DaemonClock, which tests may move forward.
  boost::asio::basic_waitable_timer<DaemonClock, DaemonWaitTraits> timer_;
};

}  // namespace ckpt
