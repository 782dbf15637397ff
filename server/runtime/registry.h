#pragma once
// Registry maps (job, pipeline) to the pipeline's runner. Reads (every new stream) are frequent,
// writes (create, delete, start) rare.
// Threading: safe for concurrent access without external synchronization (runners_ is guarded
// by mu_).

#include <memory>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "core/types.h"
#include "runtime/pipeline_runner.h"

namespace ckpt {

class Registry {
 public:
  std::shared_ptr<PipelineRunner> Find(const PipelineKey& key) const {
    ReaderLock lock(mu_);
    auto it = runners_.find(key);
    return it == runners_.end() ? nullptr : it->second;
  }

  // False if the key is taken.
  bool Add(std::shared_ptr<PipelineRunner> runner) {
    WriterLock lock(mu_);
    return runners_.emplace(runner->key(), std::move(runner)).second;
  }

  std::shared_ptr<PipelineRunner> Remove(const PipelineKey& key) {
    WriterLock lock(mu_);
    auto it = runners_.find(key);
    if (it == runners_.end()) return nullptr;
    auto runner = std::move(it->second);
    runners_.erase(it);
    return runner;
  }

  std::vector<std::shared_ptr<PipelineRunner>> All() const {
    ReaderLock lock(mu_);
    std::vector<std::shared_ptr<PipelineRunner>> all;
    all.reserve(runners_.size());
    for (const auto& [key, runner] : runners_) all.push_back(runner);
    return all;
  }

  size_t size() const {
    ReaderLock lock(mu_);
    return runners_.size();
  }

 private:
  mutable SharedMutex mu_;
  std::unordered_map<PipelineKey, std::shared_ptr<PipelineRunner>, PipelineKeyHash> runners_
      CKPT_GUARDED_BY(mu_);
};

}  // namespace ckpt
