#pragma once
// Which daemon of a server list to ask next (docs/PROTOCOL.md, "High availability"). A standby
// answers UNAVAILABLE and names the leader in its `ckpt-leader` trailer: that address is asked
// next, at most kMaxRedirects times in a row, so two standbys that name each other cannot keep a
// client busy. A daemon that names no leader (unreachable, or a standby that knows none yet) passes
// the turn to the next address of the list. Pure bookkeeping: the clients make the calls.
//
// Threading: a plain value; requires external synchronization.

#include <cstddef>
#include <string>
#include <vector>

namespace ckpt::cli {

class LeaderFollower {
 public:
  static constexpr int kMaxRedirects = 3;

  // `servers` as ParseServerList returns them: at least one. The first is asked first.
  explicit LeaderFollower(std::vector<std::string> servers);

  // Where the next call goes.
  const std::string& current() const { return current_; }

  // The daemon at current() named `leader`, which becomes current(). False, and nothing changes,
  // when kMaxRedirects were followed since the last Succeeded or Restart, or `leader` is empty or
  // current() itself (a daemon naming itself while refusing is not followed around in a circle).
  bool FollowLeader(const std::string& leader);

  // current() named no leader: the next address of the list not asked since the last Succeeded or
  // Restart becomes current(), in list order after the last list address asked. False, and nothing
  // changes, when every address of the list was asked.
  bool NextServer();

  // current() answered: it stays current, and the counts start over from it.
  void Succeeded();

  // Starts a new round after NextServer said the list is exhausted: forgets what was asked and
  // moves to the list address after the last one asked (the same one in a list of one).
  void Restart();

  int redirects() const { return redirects_; }
  // The addresses asked since the last Succeeded or Restart, in order: "a:1, b:2, c:3".
  std::string Asked() const;

 private:
  // Notes current_ as asked if it is an address of the list.
  void MarkCurrentAsked();

  // Constant after construction.
  const std::vector<std::string> servers_;

  std::string current_;
  size_t list_index_ = 0;  // the list address asked last (current_'s, when it is one)
  std::vector<bool> list_asked_;
  int redirects_ = 0;
  std::vector<std::string> asked_;
};

}  // namespace ckpt::cli
