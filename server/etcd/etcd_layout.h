#pragma once
// How ckptd lays its data out in etcd, under store.etcd.prefix P (job and pipeline ids cannot
// hold '/', so every key below parses back unambiguously):
//
//   P/election/<lease id, 16 hex>            candidates; the one created first leads. Value: its
//                                            `advertise` address. Attached to its lease.
//   P/pipelines/<job>/<pipeline>/spec        the spec (JSON), rewritten only when it changes
//   P/pipelines/<job>/<pipeline>/progress    generation, sticky state, counters, last completed
//                                            (JSON): O(1) whatever the task set's size
//   P/counters/<job>/<pipeline>              the id counter (decimal); outlives the pipeline
//   P/checkpoints/<job>/<pipeline>/<id, 19 digits>-<k>[+]   a completed checkpoint or savepoint
//                                            (JSON); the id zero-padded so that key order is id
//                                            order; k is its kind (c checkpoint, s savepoint,
//                                            x savepoint and stop), + marks one written in
//                                            chunks: a keys-only range tells the trim all it needs.
//                                            Its value also holds the pipeline's progress after
//                                            it, `retained_from` and `kept` (below)
//   P/chunks/<job>/<pipeline>/<id>/<n, 6 digits>     task states of a checkpoint too large for
//                                            one value, written before the checkpoint key, which
//                                            is the commit point and says how many chunks count
//   P/groups/<name>                          an alignment group: spec, from_config, progress and
//                                            id counter (JSON). A group round writes every
//                                            member's checkpoint key and this one in one txn
//   P/layout                                 the layout's version (kLayoutVersion), written with
//                                            a leadership's first txn: a ckptd refuses to load a
//                                            prefix of a layout it does not know (a newer ckptd's)
//   P/high_water                             the highest id counter any pipeline or group ever
//                                            held (decimal), raised in the txn that raises one: a
//                                            pipeline whose own counter cannot be read gets it
//                                            when deleted, so ids are never handed out twice
//   P/probe                                  the store's health probe
//   P/writer                                 "<epoch>:<n>": the leader's last transaction. Each
//                                            txn compares its mod revision and rewrites it, so
//                                            one whose answer was lost can be told applied or
//                                            not, and sent again without a late copy landing
//                                            twice (etcd_batch_writer.cc, Send)
//
// One write per completion. A commit writes only its checkpoint key: the progress after it rides
// in that value, so the progress key is rewritten only by what changes progress without a
// checkpoint (a failure, a pause). A pipeline's progress is whichever of the two was written last
// (the greater mod revision; every key of one txn has the same, so the backend never puts a
// pipeline's progress key and a later commit of it in one txn, and of two commits in one txn the
// higher id is the later). The checkpoint that stays the newest write is never deleted: a trim
// only takes ids below `retained_from`, which is at most the newest id (a commit below it is
// refused); whatever deletes a checkpoint otherwise must write the progress key in the same txn.
//
// Trims are lazy. `retained_from` in the newest checkpoint value is the oldest retained
// checkpoint id: ids of kind c below it are out of the history (except the restore points of
// pipelines its commit was told to keep, `kept`), whether or not their keys are gone yet (reads
// skip them, and it never moves down, so nothing trimmed comes back when `retained` grows). Their
// keys go a few at a time, as one range delete between savepoints, so a completion costs one etcd
// operation and not three.
//
// Later record kinds (restore points, released ids, alignment groups) take sibling prefixes of
// their own in the same way.
//
// Values are JSON, so that an operator can read them with `etcdctl get`. Pure functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"

namespace ckpt::etcd {

// This file's layout. A change that an older ckptd would misread takes the next number.
constexpr int kLayoutVersion = 1;

class Layout {
 public:
  explicit Layout(std::string prefix) : prefix_(std::move(prefix)) {}

  std::string Root() const { return prefix_ + "/"; }  // every key below
  std::string ElectionPrefix() const { return prefix_ + "/election/"; }
  std::string ElectionKey(int64_t lease_id) const;
  std::string PipelinesPrefix() const { return prefix_ + "/pipelines/"; }
  std::string SpecKey(const PipelineKey& key) const;
  std::string ProgressKey(const PipelineKey& key) const;
  std::string PipelinePrefix(const PipelineKey& key) const;  // its spec and progress
  std::string CountersPrefix() const { return prefix_ + "/counters/"; }
  // Alignment groups: spec, from_config and progress (id counter included) in one JSON value.
  std::string GroupsPrefix() const { return prefix_ + "/groups/"; }
  std::string GroupKey(const std::string& name) const { return GroupsPrefix() + name; }
  std::string CounterKey(const PipelineKey& key) const;
  std::string CheckpointsPrefix() const { return prefix_ + "/checkpoints/"; }
  std::string CheckpointPrefix(const PipelineKey& key) const;
  std::string CheckpointKey(const PipelineKey& key, int64_t id, CheckpointKind kind,
                            bool chunked) const;
  // Keys of ids below `id` sort before this (a listing's page bound).
  std::string CheckpointBound(const PipelineKey& key, int64_t id) const;
  std::string ChunksRoot() const { return prefix_ + "/chunks/"; }     // every chunk
  std::string ChunksPrefix(const PipelineKey& key) const;             // every chunk of a pipeline
  std::string ChunkPrefix(const PipelineKey& key, int64_t id) const;  // of one checkpoint
  std::string ChunkKey(const PipelineKey& key, int64_t id, int n) const;
  std::string LayoutKey() const { return prefix_ + "/layout"; }
  std::string ProbeKey() const { return prefix_ + "/probe"; }
  std::string HighWaterKey() const { return prefix_ + "/high_water"; }
  // Whether `etcd_key` is one of the keys above (a parse of the ones with ids in them says
  // more); any other key under the prefix is one this ckptd does not know.
  bool IsKnownKey(const std::string& etcd_key) const;
  std::string WriterKey() const { return prefix_ + "/writer"; }

  // The parts of a key under one of the prefixes above, or nothing when it is not one.
  struct PipelineRecordKey {
    PipelineKey key;
    bool is_spec = false;  // else the progress
  };
  std::optional<PipelineRecordKey> ParsePipelineKey(const std::string& etcd_key) const;
  std::optional<PipelineKey> ParseCounterKey(const std::string& etcd_key) const;
  struct CheckpointRef {
    PipelineKey key;
    int64_t id = 0;
    CheckpointKind kind = CheckpointKind::kCheckpoint;
    bool chunked = false;
  };
  std::optional<CheckpointRef> ParseCheckpointKey(const std::string& etcd_key) const;

 private:
  const std::string prefix_;
};

// The values. Encoders fail (INVALID_ARGUMENT) only on text that is not UTF-8, which the API's
// validation already refuses; decoders return nothing on anything they did not write.
Result<std::string> EncodeSpec(const PipelineSpec& spec);
std::optional<PipelineSpec> DecodeSpec(const std::string& value, const PipelineKey& key);

// An alignment group's value (P/groups/<name>); nullopt when the value is not one.
std::string EncodeGroup(const StoredGroup& group);
std::optional<StoredGroup> DecodeGroup(const std::string& value, const std::string& name);
std::string EncodeProgress(const PipelineProgress& progress);
std::optional<PipelineProgress> DecodeProgress(const std::string& value);

// Where a pipeline's history starts: plain checkpoints below `retained_from` are out of it, unless
// `kept` (a restore point of some pipeline, RestorePins) names them.
struct Horizon {
  int64_t retained_from = 0;
  std::vector<int64_t> kept;  // ascending

  bool Hides(int64_t checkpoint_id, CheckpointKind kind) const;
  bool operator==(const Horizon&) const = default;
};

// A stored checkpoint: its fields and its task states, inline (chunks == 0) or in `chunks`
// chunk values written before it; the pipeline's progress after it and the oldest retained id
// then (both absent from values written without them).
struct StoredCheckpoint {
  CompletedCheckpoint checkpoint;  // task_states empty when chunked
  int chunks = 0;
  std::optional<PipelineProgress> progress;
  Horizon horizon;
};
// The checkpoint value with its states inline, or, when they pass `max_value_bytes`, the
// manifest (chunks > 0) and the chunk values in `chunk_values`, each at most about
// max_value_bytes. `progress` and `retained_from` go with it (above).
Result<std::string> EncodeCheckpoint(const CompletedCheckpoint& checkpoint,
                                     const PipelineProgress& progress, const Horizon& horizon,
                                     size_t max_value_bytes,
                                     std::vector<std::string>* chunk_values);
std::optional<StoredCheckpoint> DecodeCheckpoint(const std::string& value);
// Adds the states of one chunk value to `states`; false when it is not one.
bool DecodeChunk(const std::string& value, std::map<std::string, TaskState>* states,
                 std::vector<TaskFigures>* figures);

}  // namespace ckpt::etcd
