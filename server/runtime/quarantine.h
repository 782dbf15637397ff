#pragma once
// Quarantine: the pipelines and alignment groups whose stored records could not be read
// (UnreadableRecord, from the store's last load). No runner exists for them: nothing is
// triggered, a hello for one is refused FAILED_PRECONDITION with the reason, operator calls other
// than Get/List/Delete are refused the same way. They are listed with state UNREADABLE and
// Pipeline.state_reason. DeletePipeline removes one (the store raises its id counter to the
// high-water mark, so a pipeline created again under its name starts above every id given).
//
// Threading: every method from any thread (one mutex, held for map operations only).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "core/types.h"

namespace ckpt {

class Quarantine {
 public:
  // Replaces what is held with `records` (a load). Unknown keys are only counted, and so is a
  // record whose name the API cannot carry (not UTF-8, a control character, empty or longer than
  // any id): it could be neither listed nor deleted through the API, so it is logged for the
  // operator to remove by hand, as a key this ckptd does not know.
  void Load(const std::vector<UnreadableRecord>& records);
  // One more (a member of an unreadable group, say).
  void Add(UnreadableRecord record);

  std::optional<UnreadableRecord> Find(const PipelineKey& key) const;
  std::optional<UnreadableRecord> FindGroup(const std::string& name) const;
  // In key (name) order.
  std::vector<UnreadableRecord> Pipelines() const;
  std::vector<UnreadableRecord> Groups() const;
  size_t pipelines() const;
  // Quarantined pipelines and groups, and the unknown keys of the last load:
  // ckptd_store_unreadable_records.
  size_t records() const;

  bool Remove(const PipelineKey& key);
  bool RemoveGroup(const std::string& name);
  // The pipelines held only for `group` (UnreadableRecord::held_for_group).
  std::vector<PipelineKey> HeldFor(const std::string& group) const;

 private:
  mutable Mutex mu_;
  std::map<PipelineKey, UnreadableRecord> pipelines_ CKPT_GUARDED_BY(mu_);
  std::map<std::string, UnreadableRecord> groups_ CKPT_GUARDED_BY(mu_);
  size_t unknown_keys_ CKPT_GUARDED_BY(mu_) = 0;
};

// "pipeline J/P is UNREADABLE: <reason>; ckptctl pipeline delete J P removes it": the status of
// a call on a quarantined pipeline.
Status UnreadableStatus(const UnreadableRecord& record);

}  // namespace ckpt
