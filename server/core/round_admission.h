#pragma once
// RoundAdmission: the daemon's one AdmissionQueue (core/admission_queue.h), shared by every
// pipeline and alignment group, which live on different loops. A pipeline asks when its round is
// ready to trigger and is told, on whatever thread admits it, once it may go; it leaves when the
// round ends or when it no longer wants one. No pipeline waits on another's lock: the lock here is
// held for a queue operation only, never while an admitted one is told (its callback only posts to
// its strand).
//
// Threading: any thread; a mutex held for a queue operation. The gauges are atomics, read by
// /metrics without the lock.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "common/mutex.h"
#include "common/status.h"
#include "core/admission_queue.h"
#include "core/explanation.h"

namespace ckpt {

class RoundAdmission {
 public:
  // Called once the ticket's round may trigger; must not block (it posts to the asker's strand).
  using Admitted = std::function<void()>;

  explicit RoundAdmission(AdmissionCaps caps = {});
  RoundAdmission(const RoundAdmission&) = delete;
  RoundAdmission& operator=(const RoundAdmission&) = delete;

  // A number no other asker has.
  AdmissionTicket NewTicket() { return next_ticket_.fetch_add(1, std::memory_order_relaxed); }
  // Whether any cap is set: without one, rounds do not ask.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // `ticket` waits for its round (AdmissionQueue::Ask); `admitted` is called once it may go,
  // possibly before Ask returns (after the lock is let go). Asking again while waiting moves it
  // and replaces `admitted`.
  void Ask(AdmissionTicket ticket, const AdmissionRequest& request, Admitted admitted);
  // A round that cannot wait (TriggerCheckpoint): OK and in flight, or RESOURCE_EXHAUSTED naming
  // the cap.
  Status AdmitNow(AdmissionTicket ticket, const AdmissionRequest& request);
  // The round ended, or is no longer wanted; unknown tickets are ignored.
  void Leave(AdmissionTicket ticket);
  void SetCaps(AdmissionCaps caps);
  AdmissionCaps caps() const;

  // What `pipeline why` says of a ticket: its place and what holds the line.
  struct View {
    AdmissionCaps caps;
    int64_t rounds_in_flight = 0;
    int64_t bytes_in_flight = 0;
    size_t waiting = 0;
    std::optional<size_t> place;  // rounds waiting ahead of the ticket; nullopt: it does not wait
    std::optional<AdmissionRefusal> held_by;
  };
  View Look(AdmissionTicket ticket) const;

  // Gauges and the counter for /metrics (ckptd_rounds_in_flight, ckptd_inflight_state_bytes,
  // ckptd_rounds_deferred_total, ckptd_rounds_waiting).
  int64_t rounds_in_flight() const { return rounds_in_flight_.load(std::memory_order_relaxed); }
  int64_t bytes_in_flight() const { return bytes_in_flight_.load(std::memory_order_relaxed); }
  int64_t rounds_waiting() const { return rounds_waiting_.load(std::memory_order_relaxed); }
  uint64_t deferred_total() const { return deferred_total_.load(std::memory_order_relaxed); }
  // The most rounds in flight at once since the daemon started (benchmarks: never above the cap).
  int64_t most_rounds_in_flight() const {
    return most_rounds_in_flight_.load(std::memory_order_relaxed);
  }

 private:
  // Takes the callbacks of `tickets` and publishes the gauges; under the lock.
  std::vector<Admitted> Admit(const std::vector<AdmissionTicket>& tickets) CKPT_REQUIRES(mu_);
  static void Tell(std::vector<Admitted> admitted);

  mutable Mutex mu_;
  AdmissionQueue queue_ CKPT_GUARDED_BY(mu_);
  std::map<AdmissionTicket, Admitted> told_when_admitted_ CKPT_GUARDED_BY(mu_);

  std::atomic<uint64_t> next_ticket_{1};
  std::atomic<bool> enabled_{false};
  std::atomic<int64_t> rounds_in_flight_{0};
  std::atomic<int64_t> bytes_in_flight_{0};
  std::atomic<int64_t> rounds_waiting_{0};
  std::atomic<uint64_t> deferred_total_{0};
  std::atomic<int64_t> most_rounds_in_flight_{0};
};

// `pipeline why` of a round waiting in line: the figures of `view` into `e` (admission_*).
void DescribeAdmission(const RoundAdmission::View& view, Explanation& e);

}  // namespace ckpt
