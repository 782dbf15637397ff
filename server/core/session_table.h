#pragma once
// SessionTable<V>: a pipeline's worker streams by session id, in id order, in one vector.
//
// Why not a std::map: a daemon holds up to 100,000 pipelines, each with a table of its streams
// in the coordinator and another of their sinks in the runner, and mostly one stream each. A
// map costs 48 bytes inline and a 32-byte node header (and the allocator's rounding) per entry;
// this costs 32 inline and the entries themselves.
//
// Why the marks: a pipeline may have up to 100,000 streams (one a task), and all of them may
// end at once (a worker fleet restarting). Erasing each from the middle of a sorted vector
// would move the rest every time; erase marks the entry dead instead (the top bit of its id,
// which session ids never use: TaskOwners::Holdable) and the table drops the dead ones in one
// pass once they outnumber the live, so n erases cost O(n) in all. Ids are handed out in
// increasing order (WorkerService), so an insert is mostly an append.
//
// Iteration skips the dead. Like a vector's, an insert or erase invalidates every iterator and
// reference; nothing may insert or erase while iterating.
//
// Threading: none of its own; a member of its owner, on the owner's strand.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/actions.h"  // SessionId

namespace ckpt {

template <typename V>
class SessionTable {
 public:
  using value_type = std::pair<SessionId, V>;

  template <typename Entry>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::remove_const_t<Entry>;
    using difference_type = std::ptrdiff_t;
    using pointer = Entry*;
    using reference = Entry&;

    Iterator() = default;
    Iterator(Entry* at, Entry* end) : at_(at), end_(end) { SkipDead(); }
    // A mutable iterator passes as a const one.
    template <typename Other,
              typename = std::enable_if_t<std::is_const_v<Entry> && !std::is_const_v<Other>>>
    Iterator(const Iterator<Other>& other) : at_(other.at_), end_(other.end_) {}

    reference operator*() const { return *at_; }
    pointer operator->() const { return at_; }
    Iterator& operator++() {
      ++at_;
      SkipDead();
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.at_ == b.at_; }
    friend bool operator!=(const Iterator& a, const Iterator& b) { return a.at_ != b.at_; }

   private:
    template <typename>
    friend class Iterator;
    friend class SessionTable;

    void SkipDead() {
      while (at_ != end_ && IsDead(at_->first)) ++at_;
    }

    Entry* at_ = nullptr;
    Entry* end_ = nullptr;  // the vector's end: also end()'s position
  };
  using iterator = Iterator<value_type>;
  using const_iterator = Iterator<const value_type>;

  SessionTable() = default;
  SessionTable(const SessionTable&) = default;
  SessionTable& operator=(const SessionTable&) = default;
  // The source is left empty, as a moved-from std::map is in practice (callers clear it anyway).
  SessionTable(SessionTable&& other) noexcept
      : entries_(std::move(other.entries_)), live_(other.live_), dead_(other.dead_) {
    other.clear();
  }
  SessionTable& operator=(SessionTable&& other) noexcept {
    if (this != &other) {
      entries_ = std::move(other.entries_);
      live_ = other.live_;
      dead_ = other.dead_;
      other.clear();
    }
    return *this;
  }

  size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }
  // Frees the entries' memory too: a pipeline whose streams all ended holds none.
  void clear() {
    std::vector<value_type>().swap(entries_);
    live_ = dead_ = 0;
  }

  iterator begin() { return iterator(Data(), DataEnd()); }
  iterator end() { return iterator(DataEnd(), DataEnd()); }
  const_iterator begin() const { return const_iterator(Data(), DataEnd()); }
  const_iterator end() const { return const_iterator(DataEnd(), DataEnd()); }

  iterator find(SessionId id) {
    value_type* at = Slot(id);
    return at && !IsDead(at->first) ? iterator(at, DataEnd()) : end();
  }
  const_iterator find(SessionId id) const { return const_cast<SessionTable*>(this)->find(id); }
  bool contains(SessionId id) const { return find(id) != end(); }
  size_t count(SessionId id) const { return contains(id) ? 1 : 0; }

  V& at(SessionId id) {
    auto it = find(id);
    if (it == end()) throw std::out_of_range("SessionTable::at: no session " + std::to_string(id));
    return it->second;
  }
  const V& at(SessionId id) const { return const_cast<SessionTable*>(this)->at(id); }

  // The value of `id`, inserted (value-initialized) when absent.
  V& operator[](SessionId id) {
    if (value_type* at = Slot(id)) {
      if (IsDead(at->first)) {  // erased earlier: the same place, alive again
        at->first = id;
        --dead_;
        ++live_;
      }
      return at->second;
    }
    const auto place = std::lower_bound(entries_.begin(), entries_.end(), id, KeyBelow);
    ++live_;
    return entries_.emplace(place, id, V{})->second;
  }

  void erase(const_iterator it) {
    auto& entry = *const_cast<value_type*>(it.at_);
    entry.first |= kDead;
    entry.second = V{};  // what it holds (a sink, strings) goes now, not at the next compaction
    --live_;
    ++dead_;
    if (live_ == 0) {
      clear();
    } else if (dead_ > live_) {
      Compact();
    }
  }
  size_t erase(SessionId id) {
    auto it = find(id);
    if (it == end()) return 0;
    erase(const_iterator(it));
    return 1;
  }

 private:
  static constexpr SessionId kDead = SessionId{1} << 63;
  static bool IsDead(SessionId stored) { return (stored & kDead) != 0; }
  static SessionId IdOf(SessionId stored) { return stored & ~kDead; }
  static bool KeyBelow(const value_type& entry, SessionId id) { return IdOf(entry.first) < id; }

  value_type* Data() { return entries_.data(); }
  value_type* DataEnd() { return entries_.data() + entries_.size(); }
  const value_type* Data() const { return entries_.data(); }
  const value_type* DataEnd() const { return entries_.data() + entries_.size(); }

  // The entry of `id`, live or dead, or null.
  value_type* Slot(SessionId id) {
    const auto place = std::lower_bound(entries_.begin(), entries_.end(), id, KeyBelow);
    return place != entries_.end() && IdOf(place->first) == id ? &*place : nullptr;
  }

  void Compact() {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [](const value_type& e) { return IsDead(e.first); }),
                   entries_.end());
    dead_ = 0;
    if (entries_.capacity() > 4 * entries_.size()) entries_.shrink_to_fit();
  }

  std::vector<value_type> entries_;
  // Bounded by kMaxTasksPerPipeline (a stream holds at least one task).
  uint32_t live_ = 0;
  uint32_t dead_ = 0;
};

}  // namespace ckpt
