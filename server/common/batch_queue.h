#pragma once
// BatchQueue: items handed to one writer from many threads without a lock, for a writer that
// takes everything queued at once (a Session call's next frame: rpc/session_call.h).
//
// Producers push onto an atomic stack. The head is one of: kIdle (nothing queued, no writer),
// kBusy (a writer is at work, nothing queued since it last took) or the newest item, whose chain
// ends in kIdle or kBusy. A push that finds kIdle makes its caller the writer: Push returns true
// and the caller must serve the queue (TakeAll, then TakeAll again when its write is done, until
// TryIdle succeeds). A push that finds a writer at work leaves the item for it. So there is at
// most one writer at a time, and an item is never left behind: the writer gives the role up only
// by swapping kBusy for kIdle, which fails once anything was pushed.
//
// Threading: Push from any thread; TakeAll and TryIdle only by the writer of the moment (the
// role passes between threads through the head's acquire/release, which orders the writer's own
// state too). The destructor frees what is still queued; no thread may use the queue then.

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace ckpt {

template <typename T>
class BatchQueue {
 public:
  struct Node {
    explicit Node(T v) : value(std::move(v)) {}
    T value;
    Node* next = nullptr;
  };

  BatchQueue() = default;
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;
  ~BatchQueue() {
    Node* node = head_.exchange(Idle(), std::memory_order_acquire);
    while (!IsMarker(node)) delete std::exchange(node, node->next);
  }

  // Queues `value`. True when the caller became the writer and must now serve the queue.
  bool Push(T value) {
    auto* node = new Node(std::move(value));
    Node* old = head_.load(std::memory_order_relaxed);
    do {
      node->next = old;
    } while (!head_.compare_exchange_weak(old, node, std::memory_order_acq_rel,
                                          std::memory_order_relaxed));
    return old == Idle();
  }

  // Writer only: what was pushed since the last take, oldest first (the caller owns the nodes;
  // free them with Free). Leaves the writer in place (kBusy).
  Node* TakeAll() {
    Node* newest = head_.exchange(Busy(), std::memory_order_acq_rel);
    Node* oldest = nullptr;
    while (!IsMarker(newest)) {
      Node* next = newest->next;
      newest->next = oldest;
      oldest = newest;
      newest = next;
    }
    return oldest;
  }

  // Writer only: gives the role up when nothing was pushed since the last TakeAll. False when
  // something was: the caller is still the writer.
  bool TryIdle() {
    Node* expected = Busy();
    return head_.compare_exchange_strong(expected, Idle(), std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }

  static void Free(Node* node) { delete node; }

 private:
  // Markers, never dereferenced: the queue's own address (kBusy) and null (kIdle).
  Node* Idle() const { return nullptr; }
  Node* Busy() const { return reinterpret_cast<Node*>(const_cast<BatchQueue*>(this)); }
  bool IsMarker(const Node* node) const { return node == Idle() || node == Busy(); }

  std::atomic<Node*> head_{nullptr};
};

}  // namespace ckpt
