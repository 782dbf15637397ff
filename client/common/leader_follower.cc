#include "common/leader_follower.h"

#include <algorithm>

namespace ckpt::cli {

LeaderFollower::LeaderFollower(std::vector<std::string> servers)
    : servers_(std::move(servers)), list_asked_(servers_.size(), false) {
  current_ = servers_.empty() ? std::string() : servers_.front();
  asked_.push_back(current_);
}

void LeaderFollower::MarkCurrentAsked() {
  const auto found = std::find(servers_.begin(), servers_.end(), current_);
  if (found == servers_.end()) return;
  list_index_ = static_cast<size_t>(found - servers_.begin());
  list_asked_[list_index_] = true;
}

bool LeaderFollower::FollowLeader(const std::string& leader) {
  if (leader.empty() || leader == current_ || redirects_ >= kMaxRedirects) return false;
  MarkCurrentAsked();
  ++redirects_;
  current_ = leader;
  asked_.push_back(current_);
  return true;
}

bool LeaderFollower::NextServer() {
  MarkCurrentAsked();
  for (size_t step = 1; step <= servers_.size(); ++step) {
    const size_t index = (list_index_ + step) % servers_.size();
    if (list_asked_[index]) continue;
    list_index_ = index;
    current_ = servers_[index];
    asked_.push_back(current_);
    return true;
  }
  return false;
}

void LeaderFollower::Succeeded() {
  std::fill(list_asked_.begin(), list_asked_.end(), false);
  redirects_ = 0;
  asked_.assign(1, current_);
}

void LeaderFollower::Restart() {
  MarkCurrentAsked();
  if (!servers_.empty()) current_ = servers_[(list_index_ + 1) % servers_.size()];
  Succeeded();
}

std::string LeaderFollower::Asked() const {
  std::string text;
  for (const std::string& address : asked_) {
    if (!text.empty()) text += ", ";
    text += address;
  }
  return text;
}

}  // namespace ckpt::cli
