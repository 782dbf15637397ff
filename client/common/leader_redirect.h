#pragma once
// Following the leader with one request at a time (ckptctl, ckpt-worker-sim --create): reads a
// standby's `ckpt-leader` trailer and decides, try after try, whether the request goes to another
// daemon of the HA group (docs/man/ckptctl.1, "OPTIONS", --server; docs/PROTOCOL.md, "High
// availability").

#include <grpcpp/grpcpp.h>

#include <functional>
#include <optional>
#include <string>

#include "common/leader_follower.h"

namespace ckpt::cli {

inline constexpr char kLeaderTrailer[] = "ckpt-leader";

// The `ckpt-leader` trailing metadata of a finished call: std::nullopt when there is none (the
// answer is no standby's), "" from a standby that knows no leader yet.
std::optional<std::string> LeaderTrailer(const grpc::ClientContext& context);

// How one try of a request at LeaderFollower::current() ended.
struct TryOutcome {
  grpc::Status status;
  std::optional<std::string> leader;  // LeaderTrailer of the try
  bool reached = false;               // the channel was connected: the daemon itself answered
};

// Says whether a client may send its request to `address`: "" when it may, else why not (a bearer
// token that would cross the network in clear text, see CheckTokenTransport).
using AddressCheck = std::function<std::string(const std::string& address)>;

// After a try: true when the request is to be tried again, at the follower's new current().
// False when the try's outcome is the answer; *gave_up then says why a leader named was not asked
// (kMaxRedirects followed, or `check` refused its address), else it is "".
//
// Retried only where the request certainly did nothing: an UNAVAILABLE from a standby (it has the
// trailer) or from a daemon never reached. With `follow_leader` a non-empty trailer sends the
// request to the leader; without it (ckptctl status reports the daemon it asked), and for an empty
// trailer or an unreachable daemon, the next address of the list is tried. UNAVAILABLE from a
// daemon reached without the trailer (shutting down, maybe after acting) is the answer.
bool RetryElsewhere(const TryOutcome& outcome, bool follow_leader, const AddressCheck& check,
                    LeaderFollower* follower, std::string* gave_up);

}  // namespace ckpt::cli
