#include "core/round_admission.h"

#include <utility>

namespace ckpt {

RoundAdmission::RoundAdmission(AdmissionCaps caps) : queue_(caps), enabled_(caps.any()) {}

std::vector<RoundAdmission::Admitted> RoundAdmission::Admit(
    const std::vector<AdmissionTicket>& tickets) {
  std::vector<Admitted> admitted;
  admitted.reserve(tickets.size());
  for (AdmissionTicket t : tickets) {
    auto it = told_when_admitted_.find(t);
    if (it == told_when_admitted_.end()) continue;
    admitted.push_back(std::move(it->second));
    told_when_admitted_.erase(it);
  }
  rounds_in_flight_.store(queue_.rounds_in_flight(), std::memory_order_relaxed);
  if (queue_.rounds_in_flight() > most_rounds_in_flight_.load(std::memory_order_relaxed)) {
    most_rounds_in_flight_.store(queue_.rounds_in_flight(), std::memory_order_relaxed);
  }
  bytes_in_flight_.store(queue_.bytes_in_flight(), std::memory_order_relaxed);
  rounds_waiting_.store(static_cast<int64_t>(queue_.waiting()), std::memory_order_relaxed);
  return admitted;
}

void RoundAdmission::Tell(std::vector<Admitted> admitted) {
  for (Admitted& a : admitted) {
    if (a) a();
  }
}

void RoundAdmission::Ask(AdmissionTicket ticket, const AdmissionRequest& request,
                         Admitted admitted) {
  std::vector<Admitted> told;
  {
    MutexLock lock(mu_);
    if (queue_.in_flight(ticket)) {
      // Admitted already (its earlier ask's answer is still on its way): told again, now.
      told.push_back(std::move(admitted));
    } else {
      const bool was_waiting = queue_.in_line(ticket);
      told_when_admitted_[ticket] = std::move(admitted);
      const std::vector<AdmissionTicket> now = queue_.Ask(ticket, request);
      if (!was_waiting && !queue_.in_flight(ticket)) {
        deferred_total_.fetch_add(1, std::memory_order_relaxed);
      }
      told = Admit(now);
    }
  }
  Tell(std::move(told));
}

Status RoundAdmission::AdmitNow(AdmissionTicket ticket, const AdmissionRequest& request) {
  MutexLock lock(mu_);
  if (auto refusal = queue_.AdmitNow(ticket, request)) {
    return Status::ResourceExhausted(refusal->Text());
  }
  Admit({});
  return Status::Ok();
}

void RoundAdmission::Leave(AdmissionTicket ticket) {
  std::vector<Admitted> told;
  {
    MutexLock lock(mu_);
    told_when_admitted_.erase(ticket);
    told = Admit(queue_.Leave(ticket));
  }
  Tell(std::move(told));
}

void RoundAdmission::SetCaps(AdmissionCaps caps) {
  std::vector<Admitted> told;
  {
    MutexLock lock(mu_);
    enabled_.store(caps.any(), std::memory_order_relaxed);
    told = Admit(queue_.SetCaps(caps));
  }
  Tell(std::move(told));
}

AdmissionCaps RoundAdmission::caps() const {
  MutexLock lock(mu_);
  return queue_.caps();
}

RoundAdmission::View RoundAdmission::Look(AdmissionTicket ticket) const {
  MutexLock lock(mu_);
  return View{queue_.caps(),    queue_.rounds_in_flight(),  queue_.bytes_in_flight(),
              queue_.waiting(), queue_.PlaceInLine(ticket), queue_.HeldBy()};
}

void DescribeAdmission(const RoundAdmission::View& view, Explanation& e) {
  e.admission_rounds_in_flight = view.rounds_in_flight;
  e.admission_bytes_in_flight = view.bytes_in_flight;
  e.admission_waiting_ahead = static_cast<int64_t>(view.place.value_or(0));
  if (view.held_by) {
    e.admission_cap = view.held_by->cap;
    e.admission_cap_value = view.held_by->limit;
  } else {
    // The line moved since the pipeline asked (its answer is on its way): the rounds cap, if set.
    const bool rounds = view.caps.max_concurrent_rounds > 0;
    e.admission_cap = rounds ? "admission.max_concurrent_rounds" : "admission.max_inflight_bytes";
    e.admission_cap_value = rounds ? view.caps.max_concurrent_rounds : view.caps.max_inflight_bytes;
  }
}

}  // namespace ckpt
