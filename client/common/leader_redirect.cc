#include "common/leader_redirect.h"

namespace ckpt::cli {

std::optional<std::string> LeaderTrailer(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find(kLeaderTrailer);
  if (found == trailers.end()) return std::nullopt;
  return std::string(found->second.data(), found->second.size());
}

bool RetryElsewhere(const TryOutcome& outcome, bool follow_leader, const AddressCheck& check,
                    LeaderFollower* follower, std::string* gave_up) {
  gave_up->clear();
  if (outcome.status.error_code() != grpc::StatusCode::UNAVAILABLE) {
    follower->Succeeded();
    return false;
  }
  // No trailer from a daemon reached: it is no standby, and may have acted.
  if (!outcome.leader && outcome.reached) return false;
  const std::string leader = outcome.leader.value_or("");
  if (follow_leader && !leader.empty() && leader != follower->current()) {
    if (const std::string refused = check ? check(leader) : ""; !refused.empty()) {
      *gave_up = "not following the leader " + leader + " named by " + follower->current() + ": " +
                 refused;
      return false;
    }
    if (follower->FollowLeader(leader)) return true;
    *gave_up = "gave up after " + std::to_string(LeaderFollower::kMaxRedirects) +
               " leader redirects (asked " + follower->Asked() + "; " + follower->current() +
               " names " + leader + " as the leader)";
    return false;
  }
  return follower->NextServer();
}

}  // namespace ckpt::cli
