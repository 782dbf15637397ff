#pragma once
// RestorePins: which checkpoints are a pipeline's operator-set restore point (CONTRACT.md,
// "Restore and release"). A pinned checkpoint stays in its pipeline's history (its commits tell
// the store to keep it, CheckpointCommit::keep) and is never released; when its last pin goes,
// its pipeline releases it if it is outside `retained` by then (OnPinDropped).
//
// Pins are added on the source pipeline's strand (PipelineCoordinator::AddPin, which checks that
// the checkpoint is in its history and stays there) and removed on the holder's (a completion
// or another restore replaces its restore point) or by whoever added one that was not used.
//
// Threading: any thread; a mutex held for a map lookup.

#include <cstdint>
#include <map>
#include <vector>

#include "common/mutex.h"
#include "core/types.h"

namespace ckpt {

class RestorePins {
 public:
  void Add(const CheckpointRef& ref);
  // True when that was its last pin.
  bool Remove(const CheckpointRef& ref);
  bool IsPinned(const PipelineKey& source, int64_t checkpoint_id) const;
  // The pinned ids of `source`, ascending.
  std::vector<int64_t> PinnedIds(const PipelineKey& source) const;
  // The pipelines (with ids) pinned in `source`, for a refusal's message.
  size_t CountFor(const PipelineKey& source) const;

 private:
  mutable Mutex mu_;
  std::map<PipelineKey, std::map<int64_t, int>> pins_ CKPT_GUARDED_BY(mu_);  // -> holders
};

}  // namespace ckpt
