#include "core/admission_queue.h"

#include <algorithm>
#include <iterator>

namespace ckpt {

int64_t AdmissionQueue::Clamped(int64_t bytes) {
  return std::clamp<int64_t>(bytes, 0, kMaxPredictedBytes);
}

std::string AdmissionRefusal::Text() const {
  const bool bytes = std::string(cap) == "admission.max_inflight_bytes";
  std::string text = std::string(cap) + " " + std::to_string(limit) + " is full (" +
                     std::to_string(in_flight) + (bytes ? " bytes" : " rounds") + " in flight";
  if (waiting > 0) text += ", " + std::to_string(waiting) + " waiting";
  return text + ")";
}

std::optional<AdmissionRefusal> AdmissionQueue::WouldPass(const AdmissionRequest& request) const {
  // Alone, any round goes: one larger than a whole cap would otherwise wait forever.
  if (flying_.empty()) return std::nullopt;
  if (caps_.max_concurrent_rounds > 0 &&
      rounds_in_flight_ + request.rounds > caps_.max_concurrent_rounds) {
    return AdmissionRefusal{"admission.max_concurrent_rounds", caps_.max_concurrent_rounds,
                            rounds_in_flight_, line_.size()};
  }
  if (caps_.max_inflight_bytes > 0 &&
      Clamped(request.bytes) > caps_.max_inflight_bytes - bytes_in_flight_) {
    return AdmissionRefusal{"admission.max_inflight_bytes", caps_.max_inflight_bytes,
                            bytes_in_flight_, line_.size()};
  }
  return std::nullopt;
}

void AdmissionQueue::Fly(AdmissionTicket ticket, const AdmissionRequest& request) {
  const int64_t bytes = Clamped(request.bytes);
  flying_[ticket] = Flying{request.rounds, bytes};
  rounds_in_flight_ += request.rounds;
  bytes_in_flight_ += bytes;  // at most the cap plus one round: far from overflowing
}

std::vector<AdmissionTicket> AdmissionQueue::AdmitFromHead() {
  std::vector<AdmissionTicket> admitted;
  while (!line_.empty()) {
    const AdmissionTicket head = line_.begin()->second;
    auto waiting = waiting_.find(head);
    if (WouldPass(waiting->second.request)) break;  // none overtakes the head
    Fly(head, waiting->second.request);
    line_.erase(line_.begin());
    waiting_.erase(waiting);
    admitted.push_back(head);
  }
  return admitted;
}

std::vector<AdmissionTicket> AdmissionQueue::Ask(AdmissionTicket ticket,
                                                 const AdmissionRequest& request) {
  if (flying_.count(ticket)) return {};
  if (auto it = waiting_.find(ticket); it != waiting_.end()) {
    line_.erase({it->second.place, ticket});
    waiting_.erase(it);
  }
  const SteadyTime due = request.line == AdmissionClass::kPeriodic ? request.due : SteadyTime{};
  const Place place{request.line, due, asked_++};
  waiting_[ticket] = Waiting{place, request};
  line_.insert({place, ticket});
  return AdmitFromHead();
}

std::optional<AdmissionRefusal> AdmissionQueue::AdmitNow(AdmissionTicket ticket,
                                                         const AdmissionRequest& request) {
  if (flying_.count(ticket)) return std::nullopt;  // its round flies already (the caller's error)
  if (!line_.empty()) return HeldBy();
  if (auto refusal = WouldPass(request)) return refusal;
  Fly(ticket, request);
  return std::nullopt;
}

std::vector<AdmissionTicket> AdmissionQueue::Leave(AdmissionTicket ticket) {
  if (auto it = flying_.find(ticket); it != flying_.end()) {
    rounds_in_flight_ -= it->second.rounds;
    bytes_in_flight_ -= it->second.bytes;
    flying_.erase(it);
  } else if (auto w = waiting_.find(ticket); w != waiting_.end()) {
    line_.erase({w->second.place, ticket});
    waiting_.erase(w);
  } else {
    return {};
  }
  return AdmitFromHead();
}

std::vector<AdmissionTicket> AdmissionQueue::SetCaps(AdmissionCaps caps) {
  caps_ = caps;
  return AdmitFromHead();
}

std::optional<size_t> AdmissionQueue::PlaceInLine(AdmissionTicket ticket) const {
  auto it = waiting_.find(ticket);
  if (it == waiting_.end()) return std::nullopt;
  return static_cast<size_t>(std::distance(line_.begin(), line_.find({it->second.place, ticket})));
}

std::optional<AdmissionRefusal> AdmissionQueue::HeldBy() const {
  if (line_.empty()) return std::nullopt;
  const auto& head = waiting_.at(line_.begin()->second);
  if (auto refusal = WouldPass(head.request)) return refusal;
  // Cannot stay so (every change admits from the head); named for completeness.
  return AdmissionRefusal{"admission.max_concurrent_rounds", caps_.max_concurrent_rounds,
                          rounds_in_flight_, line_.size()};
}

}  // namespace ckpt
