#pragma once
// RestorePins: which checkpoints are a pipeline's operator-set restore point (docs/PROTOCOL.md,
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
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "core/types.h"

namespace ckpt {

class RestorePins {
 public:
  // A pin that `holder` (the pipeline whose restore point it is) takes on `ref`.
  void Add(const CheckpointRef& ref, const PipelineKey& holder);
  // True when that was the last pin on `ref`, whoever held the others.
  bool Remove(const CheckpointRef& ref, const PipelineKey& holder);
  bool IsPinned(const PipelineKey& source, int64_t checkpoint_id) const;
  // The pinned ids of `source`, ascending.
  std::vector<int64_t> PinnedIds(const PipelineKey& source) const;
  // Who, other than `source` itself, holds a pin on a checkpoint of `source`: (id, holder),
  // ascending; what keeps `source` from being deleted.
  std::vector<std::pair<int64_t, PipelineKey>> HeldByOthers(const PipelineKey& source) const;

 private:
  mutable Mutex mu_;
  // source -> checkpoint id -> holder -> how many pins it holds (a pipeline restored twice to
  // the same checkpoint, its first pin not yet let go)
  std::map<PipelineKey, std::map<int64_t, std::map<PipelineKey, int>>> pins_ CKPT_GUARDED_BY(mu_);
};

}  // namespace ckpt
