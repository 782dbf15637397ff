#pragma once
// IoShards: the daemon's event loops. One io_context per io thread, each run by exactly that one
// thread; a pipeline lives on the shard its key hashes to (its strand, its timers), for the life
// of the process.
//
// Why not one io_context run by every thread: Asio's scheduler keeps a single queue under a single
// mutex, and a round is about ten trips through it (timer completions, strand invokers, the acks
// and the store's completion posted back). At 100,000 rounds a second the io threads then wait on
// that mutex and on each other; once behind, they fall further behind, because the contention
// grows with the backlog. With one queue per thread they share nothing on the hot path: another
// thread posting to a pipeline (a gRPC thread with an ack, the store's writer) still takes that
// shard's lock, but two io threads never compete for one. The cost: a busy shard cannot borrow an
// idle thread; pipelines hash evenly, so the load does too.
//
// Beside the shards, one control loop with a thread of its own runs what belongs to no pipeline:
// the gRPC listener, the HTTP server (a scrape of 100,000 pipelines' series must not stall the
// pipelines of a shard), the daemon's timers. Threads: shards + 1, fixed.
//
// Threading: construct, Start and Stop on the controlling thread (never on a shard's thread).
// For, Next and the accessors are safe from any thread once constructed: the shards never change.

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "core/types.h"

namespace ckpt {

class IoShards {
 public:
  // `count` shards (at least one); nothing runs until Start.
  explicit IoShards(unsigned count);
  // Stops, then destroys the handlers still queued on every shard, and only then the
  // io_contexts: a handler queued on one shard may hold the last reference to an object whose
  // timers belong to another (a worker stream's lease handler holds its session, the session its
  // pipeline's runner), and that object must not outlive its own io_context.
  ~IoShards();
  IoShards(const IoShards&) = delete;
  IoShards& operator=(const IoShards&) = delete;

  // One thread per shard. Handlers posted before Start run once it is called. Once only: a
  // stopped IoShards does not start again.
  void Start();
  // Stops every shard (queued handlers are dropped, not run) and joins the threads. Idempotent.
  void Stop();

  // The shard a pipeline lives on: the same for a key in every run of this build and every other
  // (StableKeyHash), so a restart puts each pipeline back where it was.
  boost::asio::io_context& For(const PipelineKey& key);
  // Shards in turn, for work that belongs to no pipeline (a worker stream's lease timer).
  boost::asio::io_context& Next();
  // The control loop: never a pipeline's.
  boost::asio::io_context& control() { return *control_->io; }
  boost::asio::io_context& at(size_t i) { return *shards_[i]->io; }
  // Pipeline shards (the control loop not counted).
  size_t size() const { return shards_.size(); }
  // Every loop, the shards first and the control loop last (for watchdogs and health checks).
  std::vector<boost::asio::io_context*> AllLoops();

  static size_t IndexFor(const PipelineKey& key, size_t shards);

 private:
  // An io_context whose pending handlers can be destroyed ahead of the io_context itself.
  class Loop : public boost::asio::io_context {
   public:
    Loop() : boost::asio::io_context(1) {}
    // Destroys every handler still queued (as ~io_context would first do). Safe to repeat.
    void DestroyPendingHandlers() { shutdown(); }
  };
  struct Shard {
    std::unique_ptr<Loop> io;
    std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
    std::thread thread;
  };
  static std::unique_ptr<Shard> MakeShard();
  std::vector<Shard*> AllShards();  // shards_, then control_
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<Shard> control_;
  std::atomic<size_t> next_{0};
};

}  // namespace ckpt
