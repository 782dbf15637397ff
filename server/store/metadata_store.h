#pragma once
// MetadataStore: what the daemon keeps durable. One backend so far (SQLite, sqlite_store.h); the
// interface is what an etcd backend would implement too.
//
// Threading: every method may be called from any thread. Writes are asynchronous: they are applied
// in the order they were called, by the store's own writer thread, batched into one transaction
// (group commit). `done` runs on the writer thread once the write is durable (or has failed); it
// must not block: post to your strand from it. Reads and Load are blocking and must not run on a
// strand.

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace ckpt {

class MetadataStore {
 public:
  using Done = std::function<void(Status)>;

  virtual ~MetadataStore() = default;

  // Blocking. Every pipeline with its record and id counter. Call before serving.
  virtual Result<std::vector<StoredPipeline>> LoadPipelines() = 0;

  // Creates or replaces the pipeline's record (spec, generation, sticky state, counters, last
  // completed). Does not touch the id counter or the history.
  virtual void PutPipeline(const PipelineRecord& record, Done done) = 0;

  // Replaces everything of an existing record but its spec: O(1) whatever the task set's size.
  // Does nothing (and succeeds) when the pipeline has no record: it was deleted, and a late write
  // must not bring it back.
  virtual void PutProgress(const PipelineKey& key, const PipelineProgress& progress, Done done) = 0;

  // Raises the pipeline's id counter to `new_counter` (never lowers it). The counter outlives
  // DeletePipeline, so ids are never reused for the same (job, pipeline).
  virtual void ReserveIds(const PipelineKey& key, int64_t new_counter, Done done) = 0;

  // One transaction: appends the checkpoint to the history, writes the progress with it counted,
  // and trims completed checkpoints (not savepoints) beyond `retained`. NOT_FOUND (nothing
  // written) when the pipeline has no record. By value: a round's commit is moved in (its task
  // states are hundreds of map nodes for a wide pipeline), not copied.
  virtual void CommitCheckpoint(CheckpointCommit commit, Done done) = 0;

  // A write that changes nothing anyone reads: whether the store takes writes now (StoreHealth
  // probes with it while writes fail).
  virtual void Probe(Done done) = 0;

  // Removes the record and the checkpoint history of the pipeline (not its id counter).
  virtual void DeletePipeline(const PipelineKey& key, Done done) = 0;

  // Removes whatever is stored of a pipeline the last load could not read (UnreadableRecords),
  // as DeletePipeline does, and raises its id counter to the store's high-water mark (the
  // highest id counter the store ever held: its own may be what could not be read), so that a
  // pipeline created again under its name starts above every id the store ever gave.
  virtual void DeleteUnreadablePipeline(const PipelineKey& key, Done done) {
    DeletePipeline(key, std::move(done));
  }

  // What the last LoadPipelines and LoadGroups could not read (each quarantined), and the keys
  // they did not know. Blocking reads' companion: call after them, on the same thread.
  virtual std::vector<UnreadableRecord> UnreadableRecords() { return {}; }

  // Removes these checkpoints or savepoints from the pipeline's history (ids it does not hold
  // are skipped). Never the newest one: the progress may ride with it (the etcd backend refuses
  // that with FAILED_PRECONDITION). NOT_FOUND when the pipeline has no record.
  virtual void DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids,
                                 Done done) = 0;

  // Blocking. The pipeline's id counter (0 if it never had one); it outlives DeletePipeline, so a
  // pipeline created again under the same name continues above it.
  virtual Result<int64_t> LoadIdCounter(const PipelineKey& key) = 0;

  // Blocking. Completed checkpoints and savepoints, newest first, at most `limit` (0 = all),
  // with ids below `before_id` (0 = no bound; the next page of a listing). Reads no more rows
  // than it returns.
  virtual Result<std::vector<CompletedCheckpoint>> ListCompleted(const PipelineKey& key, int limit,
                                                                 int64_t before_id = 0) = 0;

  // Blocking. Returns once everything written before the call is durable (or failed).
  virtual void Flush() = 0;

  // --- alignment groups (docs/ALIGNMENT.md); the ops of store/write_op.h say what each does ---
  // Blocking. Every group with its progress, in name order. Call before serving.
  virtual Result<std::vector<StoredGroup>> LoadGroups() = 0;
  virtual void PutGroup(const AlignmentGroupSpec& spec, bool from_config, Done done) = 0;
  virtual void DeleteGroup(const std::string& name, Done done) = 0;
  virtual void ReserveGroupIds(const std::string& name, int64_t new_counter, Done done) = 0;
  // One transaction for every member's checkpoint and the group's progress: after a crash every
  // member has the round or none has.
  virtual void CommitGroupRound(const GroupRoundCommit& commit, Done done) = 0;
};

}  // namespace ckpt
