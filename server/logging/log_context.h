#pragma once
// The pipeline a log line is about, for formats that give it fields of its own (log.format json).
// A PipelineRunner sets it around each of its log calls; spdlog's synchronous loggers format on
// the calling thread, so a thread_local carries it from the call to the formatter.
// Threading: per thread; a ScopedLogPipeline lives within one call on one thread.

#include "core/types.h"

namespace ckpt {

class ScopedLogPipeline {
 public:
  // `key` must outlive the scope.
  explicit ScopedLogPipeline(const PipelineKey& key);
  ~ScopedLogPipeline();
  ScopedLogPipeline(const ScopedLogPipeline&) = delete;
  ScopedLogPipeline& operator=(const ScopedLogPipeline&) = delete;

 private:
  const PipelineKey* previous_;
};

// The pipeline of the innermost live ScopedLogPipeline on this thread, or null.
const PipelineKey* CurrentLogPipeline();

}  // namespace ckpt
