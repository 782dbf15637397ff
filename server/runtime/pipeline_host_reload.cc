// PipelineHost::ApplyDeclared, a config reload's part in the host: the pipelines the file declares
// are created or brought to their declared spec, those it no longer declares become the API's,
// and the reload waits for all of it (ReloadLatch) for a bounded time, or until
// CancelApplyDeclared (shutdown). The rest of the host is in pipeline_host.cc.
//
// Threading: ApplyDeclared on the controlling thread (or main's reload thread), never beside
// another; the runners' answers count down the latch from their strands. CancelApplyDeclared
// from any thread.
#include <spdlog/spdlog.h>

#include <optional>
#include <set>

#include "common/mutex.h"
#include "runtime/pipeline_host.h"
#include "runtime/pipeline_runner.h"

namespace ckpt {

// Counts down the pipeline changes a reload started, so that it can wait for them with a deadline
// (or until the daemon shuts down).
class ReloadLatch {
 public:
  explicit ReloadLatch(int count) : remaining_(count) {}
  // The wait ends now, whatever is left (daemon shutdown).
  void Cancel() {
    MutexLock lock(mu_);
    cancelled_ = true;
    cv_.NotifyAll();
  }
  // `outcome` null: done, nothing to count.
  void Done(int ReloadResult::*outcome) {
    MutexLock lock(mu_);
    if (outcome) ++(result_.*outcome);
    if (--remaining_ == 0) cv_.NotifyAll();
  }
  // The outcomes counted so far; the changes not done in time count as failed.
  ReloadResult Wait(std::chrono::steady_clock::duration timeout) {
    MutexLock lock(mu_);
    cv_.WaitFor(lock, timeout,
                [this]() CKPT_REQUIRES(mu_) { return remaining_ == 0 || cancelled_; });
    ReloadResult result = result_;
    result.failed += remaining_;
    return result;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int remaining_ CKPT_GUARDED_BY(mu_);
  bool cancelled_ CKPT_GUARDED_BY(mu_) = false;
  ReloadResult result_ CKPT_GUARDED_BY(mu_);
};

ReloadResult PipelineHost::ApplyDeclared(const std::vector<PipelineSpec>& declared_specs,
                                         std::chrono::steady_clock::duration wait,
                                         const std::map<PipelineKey, CheckpointRef>& restore_from) {
  // Declared pipelines: created, or updated to match the file, as at start; but a pipeline
  // created through the API is never touched by a reload (docs/man/ckptd.yaml.5,
  // "DECLARED PIPELINES"). Pipelines the file declared until now but no longer does become the
  // API's (PipelineRunner::Undeclare).
  std::set<PipelineKey> declared;
  for (const PipelineSpec& spec : declared_specs) declared.insert(spec.key);
  std::vector<std::shared_ptr<PipelineRunner>> others;
  for (auto& runner : registry_.All()) {
    if (!declared.count(runner->key())) others.push_back(std::move(runner));
  }
  auto latch =
      std::make_shared<ReloadLatch>(static_cast<int>(declared_specs.size() + others.size()));
  {
    MutexLock lock(reload_mu_);
    active_reload_ = latch;
    if (reload_cancelled_) latch->Cancel();  // shutdown came before the wait began
  }
  for (const auto& runner : others) {
    runner->Undeclare([latch](bool was_declared) {
      latch->Done(was_declared ? &ReloadResult::undeclared : nullptr);
    });
  }
  for (const PipelineSpec& spec : declared_specs) {
    const std::string name = spec.key.ToString();
    if (auto runner = registry_.Find(spec.key)) {
      runner->ApplyDeclaredSpec(spec, [latch, name](Result<bool> changed) {
        if (!changed.ok()) {
          const bool api = changed.status().code() == StatusCode::kFailedPrecondition;
          spdlog::log(api ? spdlog::level::warn : spdlog::level::err, "[{}] reload: {}", name,
                      changed.status().message());
          return latch->Done(api ? &ReloadResult::left_alone : &ReloadResult::failed);
        }
        if (*changed) spdlog::info("[{}] reload: spec updated from the config file", name);
        latch->Done(*changed ? &ReloadResult::updated : &ReloadResult::unchanged);
      });
      continue;
    }
    auto created = [latch, name](const Result<std::shared_ptr<PipelineRunner>>& created) {
      if (!created.ok()) {
        spdlog::error("[{}] reload: not created: {}", name, created.status().message());
        return latch->Done(&ReloadResult::failed);
      }
      latch->Done(&ReloadResult::created);
    };
    std::optional<std::pair<CheckpointRef, CompletedCheckpoint>> source;
    if (auto from = restore_from.find(spec.key); from != restore_from.end()) {
      auto pinned = PinRestoreSource(from->second, spec.key);
      if (!pinned.ok()) {
        created(Status(pinned.status().code(), "its restore_from: " + pinned.status().message() +
                                                   "; fix the file and reload"));
        continue;
      }
      source = std::move(*pinned);
    }
    Create(spec, std::move(created), /*from_config=*/true, std::move(source));
  }
  ReloadResult result = latch->Wait(wait);
  {
    MutexLock lock(reload_mu_);
    active_reload_.reset();
  }
  return result;
}

void PipelineHost::CancelApplyDeclared() {
  MutexLock lock(reload_mu_);
  reload_cancelled_ = true;
  if (auto latch = active_reload_.lock()) latch->Cancel();
}

}  // namespace ckpt
