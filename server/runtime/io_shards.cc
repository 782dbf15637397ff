#include "runtime/io_shards.h"

#include <algorithm>

namespace ckpt {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;

uint64_t Fnv1a(uint64_t h, unsigned char c) { return (h ^ c) * 1099511628211ULL; }

uint64_t Fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = Fnv1a(h, c);
  return h;
}

}  // namespace

IoShards::IoShards(unsigned count) {
  count = std::max(1u, count);
  for (unsigned i = 0; i < count; ++i) {
    auto shard = std::make_unique<Shard>();
    // Concurrency hint 1 (Loop): exactly one thread runs this io_context. Posts from other threads
    // stay locked; the hint only spares the scheduler from waking other threads that do not exist.
    shard->io = std::make_unique<Loop>();
    shard->work = std::make_unique<
        boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
        shard->io->get_executor());
    shards_.push_back(std::move(shard));
  }
}

IoShards::~IoShards() {
  Stop();
  for (auto& shard : shards_) shard->io->DestroyPendingHandlers();
}

void IoShards::Start() {
  for (auto& shard : shards_) {
    if (shard->thread.joinable()) continue;
    boost::asio::io_context* io = shard->io.get();
    shard->thread = std::thread([io] { io->run(); });
  }
}

void IoShards::Stop() {
  for (auto& shard : shards_) {
    shard->work.reset();
    shard->io->stop();
  }
  for (auto& shard : shards_) {
    if (shard->thread.joinable()) shard->thread.join();
  }
}

size_t IoShards::IndexFor(const PipelineKey& key, size_t shards) {
  uint64_t h = Fnv1a(kFnvOffset, key.job_id);
  h = Fnv1a(h, '\0');  // a separator: job "a" + pipeline "bc" is not job "ab" + pipeline "c"
  h = Fnv1a(h, key.pipeline_id);
  return static_cast<size_t>(h % std::max<size_t>(1, shards));
}

boost::asio::io_context& IoShards::For(const PipelineKey& key) {
  return *shards_[IndexFor(key, shards_.size())]->io;
}

boost::asio::io_context& IoShards::Next() {
  return *shards_[next_.fetch_add(1, std::memory_order_relaxed) % shards_.size()]->io;
}

}  // namespace ckpt
