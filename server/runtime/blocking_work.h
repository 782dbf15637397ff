#pragma once
// BlockingWork: one thread for operator work that blocks (store reads, a create's reads), so that
// no strand and no gRPC reaction ever waits on disk, with a bound on what may wait for it: a
// client sending reads in a loop gets RESOURCE_EXHAUSTED once max_waiting wait, instead of
// growing a queue without end. The daemon keeps reads and writes apart (PipelineHost), so that a
// viewer's reads never delay a create or a restore.
//
// Threading: Post from any thread; the tasks run on the one thread, in order. Join from the
// controlling thread at shutdown.

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstddef>
#include <functional>
#include <string>

namespace ckpt {

class BlockingWork {
 public:
  explicit BlockingWork(size_t max_waiting) : max_waiting_(max_waiting) {}
  ~BlockingWork() { Join(); }
  BlockingWork(const BlockingWork&) = delete;
  BlockingWork& operator=(const BlockingWork&) = delete;

  // Runs `task` on the thread, unless max_waiting tasks wait already: false then, and nothing
  // runs.
  bool Post(std::function<void()> task) {
    if (waiting_.fetch_add(1, std::memory_order_relaxed) >= max_waiting_) {
      waiting_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    boost::asio::post(pool_, [this, task = std::move(task)] {
      waiting_.fetch_sub(1, std::memory_order_relaxed);
      task();
    });
    return true;
  }
  void Join() { pool_.join(); }
  size_t waiting() const { return waiting_.load(std::memory_order_relaxed); }
  size_t max_waiting() const { return max_waiting_; }

 private:
  const size_t max_waiting_;
  std::atomic<size_t> waiting_{0};
  boost::asio::thread_pool pool_{1};
};

}  // namespace ckpt
