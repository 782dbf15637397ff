#pragma once
// What every store backend refuses of a group write the same way, before it writes anything:
// a name that cannot be a key, a negative counter, a round naming a member twice or naming more
// members than one etcd transaction holds. INVALID_ARGUMENT with the reason; OK otherwise.

#include <set>
#include <string>

#include "common/status.h"
#include "core/types.h"

namespace ckpt {

// The most pipelines one alignment group may hold: a round's commit point is one etcd txn with
// every member's checkpoint key and counter (and room for their trims).
inline constexpr size_t kMaxGroupMembers = 40;

inline Status CheckGroupName(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return Status::InvalidArgument("alignment group name \"" + name + "\" is empty or holds '/'");
  }
  return Status::Ok();
}

inline Status CheckGroupCounter(const std::string& name, int64_t counter) {
  if (counter < 0) {
    return Status::InvalidArgument("id counter of alignment group " + name + " cannot be " +
                                   std::to_string(counter));
  }
  return Status::Ok();
}

inline Status CheckGroupRound(const GroupRoundCommit& commit) {
  if (Status s = CheckGroupName(commit.group); !s.ok()) return s;
  if (commit.members.size() > kMaxGroupMembers) {
    return Status::InvalidArgument("group round of " + commit.group + ": " +
                                   std::to_string(commit.members.size()) + " members, more than " +
                                   std::to_string(kMaxGroupMembers));
  }
  std::set<PipelineKey> seen;
  for (const CheckpointCommit& member : commit.members) {
    if (!seen.insert(member.key).second) {
      return Status::InvalidArgument("group round of " + commit.group + ": member " +
                                     member.key.ToString() + " twice");
    }
  }
  return Status::Ok();
}

}  // namespace ckpt
