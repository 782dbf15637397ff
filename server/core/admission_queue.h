#pragma once
// AdmissionQueue: which rounds of the daemon's pipelines may be in flight at once
// (docs/PROTOCOL.md, "Admission"). Caps on the rounds in flight and on their predicted bytes; a
// round that would pass one waits in line: savepoints and stops first, then periodic rounds
// oldest due first. None overtakes another: when the head does not fit, nothing behind it goes
// (a small round slipping past a large one would starve it). A round larger than a whole cap is
// admitted alone, once nothing else is in flight.
//
// Pure bookkeeping: no clock, no threads, no callbacks; RoundAdmission (core/round_admission.h)
// makes it safe to share and tells the admitted. Not thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/types.h"

namespace ckpt {

// admission { max_concurrent_rounds, max_inflight_bytes }; 0 = no cap.
struct AdmissionCaps {
  int64_t max_concurrent_rounds = 0;
  int64_t max_inflight_bytes = 0;

  bool any() const { return max_concurrent_rounds > 0 || max_inflight_bytes > 0; }
  bool operator==(const AdmissionCaps&) const = default;
};

// A round's predicted bytes are clamped to [0, this]: they come from workers' acks (size_bytes),
// and sums of hostile figures must neither overflow nor go negative.
inline constexpr int64_t kMaxPredictedBytes = int64_t{1} << 60;

// Saturating: a + b within [0, kMaxPredictedBytes], for operands in that range.
constexpr int64_t AddPredictedBytes(int64_t a, int64_t b) {
  return b > kMaxPredictedBytes - a ? kMaxPredictedBytes : a + b;
}

// Who asks: a pipeline or an alignment group, by a number the daemon hands out (RoundAdmission).
using AdmissionTicket = uint64_t;

// Which line a round waits in: savepoints (and stops) ahead of every periodic round.
enum class AdmissionClass : uint8_t { kSavepoint = 0, kPeriodic = 1 };

struct AdmissionRequest {
  AdmissionClass line = AdmissionClass::kPeriodic;
  // Periodic: when the round became due (the oldest due goes first). Savepoints keep the order
  // they asked in; this is ignored for them.
  SteadyTime due{};
  int64_t rounds = 1;  // an alignment group's round counts as its members
  int64_t bytes = 0;   // predicted: the last completed checkpoint's size (0: none yet)
};

// Where a pipeline or a group stands with the admission, as its coordinator keeps it.
enum class AdmissionState : uint8_t {
  kNone,              // asked for nothing, holds nothing
  kWaitingPeriodic,   // a periodic round waits in line (AskAdmission)
  kWaitingSavepoint,  // a savepoint waits in line, ahead of every periodic round
  kAdmitted,          // its round may go, or flies: it leaves when the round ends
};
constexpr bool InLine(AdmissionState state) {
  return state == AdmissionState::kWaitingPeriodic || state == AdmissionState::kWaitingSavepoint;
}

// Why a round cannot be admitted now (TriggerCheckpoint's RESOURCE_EXHAUSTED names the cap).
struct AdmissionRefusal {
  const char* cap = "";  // "admission.max_concurrent_rounds" or "admission.max_inflight_bytes"
  int64_t limit = 0;
  int64_t in_flight = 0;  // rounds, or bytes, as the cap counts
  size_t waiting = 0;     // rounds already in line

  std::string Text() const;
};

class AdmissionQueue {
 public:
  explicit AdmissionQueue(AdmissionCaps caps = {}) : caps_(caps) {}

  // `ticket` waits for a round as `request` says (or, already waiting, moves to where the request
  // puts it now: a savepoint asked while its periodic round waited). Returns the tickets this
  // admitted, in order; possibly `ticket` itself. A ticket in flight asking again is ignored.
  std::vector<AdmissionTicket> Ask(AdmissionTicket ticket, const AdmissionRequest& request);
  // A round that cannot wait (TriggerCheckpoint): admitted now when nothing waits and it fits;
  // otherwise the cap it would pass (or the one the waiting rounds are held by).
  std::optional<AdmissionRefusal> AdmitNow(AdmissionTicket ticket, const AdmissionRequest& request);
  // `ticket`'s round ended, or it no longer wants one: it leaves the flight or the line, and the
  // tickets that admitted are returned. Unknown tickets are ignored.
  std::vector<AdmissionTicket> Leave(AdmissionTicket ticket);
  // New caps (a reload): what fits now is admitted and returned.
  std::vector<AdmissionTicket> SetCaps(AdmissionCaps caps);

  const AdmissionCaps& caps() const { return caps_; }
  int64_t rounds_in_flight() const { return rounds_in_flight_; }
  int64_t bytes_in_flight() const { return bytes_in_flight_; }
  size_t waiting() const { return line_.size(); }
  bool in_flight(AdmissionTicket ticket) const { return flying_.count(ticket) != 0; }
  bool in_line(AdmissionTicket ticket) const { return waiting_.count(ticket) != 0; }
  // How many rounds wait ahead of `ticket` (nullopt: it does not wait). A walk of the line: for
  // `pipeline why`, not for every ask.
  std::optional<size_t> PlaceInLine(AdmissionTicket ticket) const;
  // The cap that holds the head of the line now, as a refusal would say it (nullopt: none waits).
  std::optional<AdmissionRefusal> HeldBy() const;

 private:
  // The line's order: the class, then the due time (periodic), then the order of asking.
  using Place = std::tuple<AdmissionClass, SteadyTime, uint64_t>;
  struct Waiting {
    Place place;
    AdmissionRequest request;
  };
  struct Flying {
    int64_t rounds = 0;
    int64_t bytes = 0;
  };

  // A request's bytes within [0, kMaxPredictedBytes].
  static int64_t Clamped(int64_t bytes);
  // Whether `request` may fly now beside what flies already; otherwise the cap it would pass.
  std::optional<AdmissionRefusal> WouldPass(const AdmissionRequest& request) const;
  void Fly(AdmissionTicket ticket, const AdmissionRequest& request);
  // Admits from the head of the line while the head fits.
  std::vector<AdmissionTicket> AdmitFromHead();

  AdmissionCaps caps_;
  std::map<AdmissionTicket, Flying> flying_;
  std::map<AdmissionTicket, Waiting> waiting_;
  std::set<std::pair<Place, AdmissionTicket>> line_;
  int64_t rounds_in_flight_ = 0;
  int64_t bytes_in_flight_ = 0;
  uint64_t asked_ = 0;  // the order of asking, for ties and savepoints
};

}  // namespace ckpt
