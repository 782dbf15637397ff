#include "logging/log_context.h"

namespace ckpt {
namespace {
thread_local const PipelineKey* current_pipeline = nullptr;
}  // namespace

ScopedLogPipeline::ScopedLogPipeline(const PipelineKey& key) : previous_(current_pipeline) {
  current_pipeline = &key;
}

ScopedLogPipeline::~ScopedLogPipeline() { current_pipeline = previous_; }

const PipelineKey* CurrentLogPipeline() { return current_pipeline; }

}  // namespace ckpt
