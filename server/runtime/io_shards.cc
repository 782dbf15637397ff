#include "runtime/io_shards.h"

#include <algorithm>

namespace ckpt {

std::unique_ptr<IoShards::Shard> IoShards::MakeShard() {
  auto shard = std::make_unique<Shard>();
  // Concurrency hint 1 (Loop): exactly one thread runs this io_context. Posts from other threads
  // stay locked; the hint only spares the scheduler from waking other threads that do not exist.
  shard->io = std::make_unique<Loop>();
  shard->work =
      std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          shard->io->get_executor());
  return shard;
}

IoShards::IoShards(unsigned count) : control_(MakeShard()) {
  count = std::max(1u, count);
  for (unsigned i = 0; i < count; ++i) shards_.push_back(MakeShard());
}

IoShards::~IoShards() {
  Stop();
  for (auto& shard : shards_) shard->io->DestroyPendingHandlers();
  control_->io->DestroyPendingHandlers();
}

std::vector<boost::asio::io_context*> IoShards::AllLoops() {
  std::vector<boost::asio::io_context*> loops;
  for (auto& shard : shards_) loops.push_back(shard->io.get());
  loops.push_back(control_->io.get());
  return loops;
}

void IoShards::Start() {
  for (auto* shard : AllShards()) {
    if (shard->thread.joinable()) continue;
    boost::asio::io_context* io = shard->io.get();
    shard->thread = std::thread([io] { io->run(); });
  }
}

void IoShards::Stop() {
  for (auto* shard : AllShards()) {
    shard->work.reset();
    shard->io->stop();
  }
  for (auto* shard : AllShards()) {
    if (shard->thread.joinable()) shard->thread.join();
  }
}

std::vector<IoShards::Shard*> IoShards::AllShards() {
  std::vector<Shard*> all;
  for (auto& shard : shards_) all.push_back(shard.get());
  all.push_back(control_.get());
  return all;
}

size_t IoShards::IndexFor(const PipelineKey& key, size_t shards) {
  return static_cast<size_t>(StableKeyHash(key) % std::max<size_t>(1, shards));
}

boost::asio::io_context& IoShards::For(const PipelineKey& key) {
  return *shards_[IndexFor(key, shards_.size())]->io;
}

boost::asio::io_context& IoShards::Next() {
  return *shards_[next_.fetch_add(1, std::memory_order_relaxed) % shards_.size()]->io;
}

}  // namespace ckpt
