// EtcdBackend's reads of etcd: the load of the view and the pipelines (LoadPipelines: from the
// standby's warm copy, else read from etcd at one revision, then checked record by record), the
// groups, an id counter, a pipeline's completed checkpoints (ListCompleted, newest first, page by
// page), and the paging under them (RangeAll, ReadValues, ReadChunks).
//
// Threading: LoadPipelines on the takeover thread, holding view_mu_ while it loads (or the first
// batch loads, on GroupCommitStore's writer thread, under the same lock); LoadGroupView on the
// writer thread under it too. ListCompleted, LoadIdCounter and LoadGroups on any thread: they
// touch no view, only horizon_mu_ (to copy one horizon) and unreadable_mu_.

#include "etcd/etcd_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/printable.h"
#include "core/spec_validation.h"
#include "etcd/etcd_backend_internal.h"

namespace ckpt {

using etcd_backend_internal::ParseCounter;
using etcdserverpb::KeyValue;
using etcdserverpb::RangeRequest;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

Result<std::vector<KeyValue>> EtcdBackend::RangeAll(const std::string& key,
                                                    const std::string& range_end, bool keys_only,
                                                    int64_t* revision) {
  std::vector<KeyValue> all;
  RangeRequest request;
  request.set_key(key);
  request.set_range_end(range_end);
  request.set_keys_only(keys_only);
  // Values may be up to kMaxValueBytes: a page stays well under the channel's receive limit.
  request.set_limit(keys_only ? 10000 : 64);
  request.set_revision(*revision);
  while (true) {
    auto page = client_->Range(request);
    if (!page.ok()) return page.status();
    if (*revision == 0) {
      *revision = page->header().revision();
      request.set_revision(*revision);
    }
    for (auto& kv : *page->mutable_kvs()) all.push_back(std::move(kv));
    if (!page->more() || page->kvs().empty()) break;
    request.set_key(all.back().key() + std::string(1, '\0'));
  }
  return all;
}

Result<std::vector<std::string>> EtcdBackend::ReadValues(const std::vector<std::string>& keys,
                                                         int64_t revision) {
  // A few dozen a txn: values may be up to kMaxValueBytes, and an answer stays well under the
  // channel's receive limit.
  constexpr size_t kReadsPerTxn = 64;
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (size_t first = 0; first < keys.size(); first += kReadsPerTxn) {
    TxnRequest txn;
    const size_t last = std::min(keys.size(), first + kReadsPerTxn);
    for (size_t k = first; k < last; ++k) {
      RangeRequest* range = txn.add_success()->mutable_request_range();
      range->set_key(keys[k]);
      range->set_revision(revision);
    }
    TxnResponse response;
    EtcdError error;
    if (!client_->Txn(txn, &response, &error)) return error.status;
    if (response.responses_size() != static_cast<int>(last - first)) {
      return Status::Internal("etcd answered " + std::to_string(response.responses_size()) +
                              " reads of " + std::to_string(last - first));
    }
    for (size_t k = first; k < last; ++k) {
      const auto& kvs = response.responses(static_cast<int>(k - first)).response_range().kvs();
      if (kvs.empty()) {
        return Status::Internal(keys[k] + " is gone at revision " + std::to_string(revision));
      }
      values.push_back(kvs[0].value());
    }
  }
  return values;
}

Result<std::vector<StoredPipeline>> EtcdBackend::LoadPipelines() {
  MutexLock lock(view_mu_);
  return LoadView();
}

Result<etcd::StoreImage> EtcdBackend::ReadImage() {
  etcd::StoreImage image;
  int64_t revision = 0;  // every range below reads the store at the first one's revision
  auto records = RangeAll(layout_.PipelinesPrefix(), PrefixEnd(layout_.PipelinesPrefix()),
                          /*keys_only=*/false, &revision);
  if (!records.ok()) return records.status();
  auto counters = RangeAll(layout_.CountersPrefix(), PrefixEnd(layout_.CountersPrefix()),
                           /*keys_only=*/false, &revision);
  if (!counters.ok()) return counters.status();
  auto history = RangeAll(layout_.CheckpointsPrefix(), PrefixEnd(layout_.CheckpointsPrefix()),
                          /*keys_only=*/true, &revision);
  if (!history.ok()) return history.status();
  auto layout = RangeAll(layout_.LayoutKey(), "", /*keys_only=*/false, &revision);
  if (!layout.ok()) return layout.status();
  auto writer = RangeAll(layout_.WriterKey(), "", /*keys_only=*/true, &revision);
  if (!writer.ok()) return writer.status();
  auto high_water = RangeAll(layout_.HighWaterKey(), "", /*keys_only=*/false, &revision);
  if (!high_water.ok()) return high_water.status();
  // Every other key but the chunks (keys only): the ranges between the prefixes read above,
  // where election keys, groups, singletons and keys no ckptd wrote sit.
  const std::string root = layout_.Root();
  const std::pair<std::string, std::string> gaps[] = {
      {root, layout_.CheckpointsPrefix()},
      {PrefixEnd(layout_.CheckpointsPrefix()), layout_.ChunksRoot()},
      {PrefixEnd(layout_.ChunksRoot()), layout_.CountersPrefix()},
      {PrefixEnd(layout_.CountersPrefix()), layout_.PipelinesPrefix()},
      {PrefixEnd(layout_.PipelinesPrefix()), PrefixEnd(root)},
  };
  for (const auto& [from, to] : gaps) {
    auto others = RangeAll(from, to, /*keys_only=*/true, &revision);
    if (!others.ok()) return others.status();
    for (const KeyValue& kv : *others) image.others.push_back(kv.key());
  }
  image.revision = revision;
  image.writer_revision = writer->empty() ? 0 : writer->front().mod_revision();
  image.records = std::move(*records);
  image.counters = std::move(*counters);
  image.history = std::move(*history);
  if (!layout->empty()) image.layout = layout->front().value();
  if (!high_water->empty()) image.high_water = high_water->front().value();
  // The newest write of each pipeline among the keys that parse (BuildView says which do not).
  std::vector<KeyValue> known;
  for (const KeyValue& kv : image.history) {
    if (layout_.ParseCheckpointKey(kv.key())) known.push_back(kv);
  }
  auto newest = etcd::NewestCheckpoints(layout_, known);
  if (!newest) return image;  // cannot happen: only keys that parse
  std::vector<std::string> newest_keys;
  for (const auto& [key, kv] : *newest) newest_keys.push_back(kv->key());
  auto newest_values = ReadValues(newest_keys, revision);
  if (!newest_values.ok()) return newest_values.status();
  for (size_t k = 0; k < newest_keys.size(); ++k) {
    image.newest_values[newest_keys[k]] = std::move((*newest_values)[k]);
  }
  return image;
}

Result<std::vector<StoredPipeline>> EtcdBackend::LoadView() {
  view_loaded_ = false;
  const auto began = std::chrono::steady_clock::now();
  std::optional<etcd::StoreImage> image;
  if (mirror_) {
    // A standby's warm copy, once it has seen the last write of every earlier leader (the write
    // cursor, read now): nothing to read again.
    auto writer = ReadWriter();
    // No cursor (a prefix nothing fenced has written to): nothing to tell the copy is current by.
    if (writer.ok() && writer->mod_revision() > 0) {
      image = mirror_->Take(writer->mod_revision(), kWarmWait);
    }
    {
      MutexLock watching(watching_mu_);
      watching_ = nullptr;
    }
    mirror_.reset();
  }
  const bool warm = image.has_value();
  if (!warm) {
    auto read = ReadImage();
    if (!read.ok()) return read.status();
    image = std::move(*read);
  }
  last_load_warm_.store(warm, std::memory_order_relaxed);
  auto loaded = BuildView(*image);
  if (loaded.ok()) {
    spdlog::info(
        "store: loaded {} pipeline(s), {} id counter(s), {} checkpoint(s) from {} at revision {} "
        "({}, {} ms)",
        loaded->size(), counters_.size(), image->history.size(), name_, image->revision,
        warm ? "the standby's watched copy" : "read from etcd",
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                              began)
            .count());
  }
  return loaded;
}

Result<std::vector<StoredPipeline>> EtcdBackend::BuildView(const etcd::StoreImage& image) {
  const std::string where = name_;
  const std::string known = std::to_string(etcd::kLayoutVersion);
  if (image.layout && *image.layout != known) {
    // The layout as a whole: nothing of it can be trusted (exit 65, ha/etcd_outcomes.h).
    return Status::DataLoss("the data in " + where + " has layout " + *image.layout + " (" +
                            layout_.LayoutKey() + "); this ckptd reads layout " + known +
                            ": a newer ckptd wrote it. Run that version or a later one on every "
                            "daemon of the group");
  }
  layout_stored_ = image.layout.has_value();
  pipelines_.clear();
  counters_.clear();
  // A record that does not read or validate quarantines its pipeline alone; a key this ckptd
  // does not know is passed over. Both are reported (UnreadableRecords) and said once each.
  std::map<PipelineKey, std::string> damaged;  // the first reason of each
  std::vector<UnreadableRecord> unknown;
  auto damage = [&](const PipelineKey& key, std::string why) { damaged.emplace(key, why); };
  auto unknown_key = [&](const std::string& key) {
    UnreadableRecord record;
    record.kind = UnreadableRecord::Kind::kUnknownKey;
    record.reason = Printable(key) + " in " + where + ": a key this ckptd does not know (ignored)";
    unknown.push_back(std::move(record));
  };
  int64_t high_water = 0;
  if (image.high_water && !ParseCounter(*image.high_water, &high_water)) {
    return Status::DataLoss("the ids' high-water mark " + layout_.HighWaterKey() + " in " + where +
                            " is not a number; ids could be handed out twice");
  }
  std::set<PipelineKey> counter_unreadable;
  for (const KeyValue& kv : image.counters) {
    auto key = layout_.ParseCounterKey(kv.key());
    int64_t value = 0;
    if (!key) {
      unknown_key(kv.key());
    } else if (!ParseCounter(kv.value(), &value)) {
      counter_unreadable.insert(*key);
      damage(*key, "id counter " + Printable(kv.key()) + ": not a number");
    } else {
      counters_[*key] = value;
      high_water = std::max(high_water, value);
    }
  }
  for (const std::string& key : image.others) {
    if (!layout_.IsKnownKey(key)) unknown_key(key);
  }
  struct Parts {
    std::optional<PipelineSpec> spec;
    std::optional<PipelineProgress> progress;
    int64_t progress_revision = 0;  // its key's mod revision
  };
  std::map<PipelineKey, Parts> parts;
  for (const KeyValue& kv : image.records) {
    auto parsed = layout_.ParsePipelineKey(kv.key());
    if (!parsed) {
      unknown_key(kv.key());
      continue;
    }
    Parts& part = parts[parsed->key];
    if (parsed->is_spec) {
      part.spec = etcd::DecodeSpec(kv.value(), parsed->key);
      if (!part.spec) damage(parsed->key, "spec " + Printable(kv.key()) + ": does not parse");
    } else {
      part.progress = etcd::DecodeProgress(kv.value());
      if (!part.progress) {
        damage(parsed->key, "progress " + Printable(kv.key()) + ": does not parse");
      }
      part.progress_revision = kv.mod_revision();
    }
  }
  // Each pipeline's newest checkpoint write: its value says where the history starts, and holds
  // the progress when it is newer than the progress key (etcd_layout.h).
  std::map<PipelineKey, std::vector<HistoryEntry>> histories;
  std::map<PipelineKey, CompletedCheckpoint> newest_checkpoints;  // with their task states
  std::vector<KeyValue> known_history;
  for (const KeyValue& kv : image.history) {
    auto ref = layout_.ParseCheckpointKey(kv.key());
    if (!ref) {
      unknown_key(kv.key());
      continue;
    }
    known_history.push_back(kv);
    PipelineView& view = pipelines_[ref->key];
    (ref->kind == CheckpointKind::kCheckpoint ? view.checkpoint_ids : view.savepoint_ids)
        .insert(ref->id);
    histories[ref->key].push_back({ref->id, ref->kind});  // keys sort in id order
    if (ref->chunked) view.chunked[ref->id] = 1;          // the count matters only for reading
    high_water = std::max(high_water, ref->id);
  }
  auto newest = etcd::NewestCheckpoints(layout_, known_history);
  if (!newest) return Status::Internal("a checkpoint key that parsed did not parse again");
  for (const auto& [key, kv] : *newest) {
    auto value = image.newest_values.find(kv->key());
    if (value == image.newest_values.end()) {
      return Status::Internal("the value of " + kv->key() + " was not read");
    }
    auto stored = etcd::DecodeCheckpoint(value->second);
    if (!stored) {
      damage(key, "checkpoint " + Printable(kv->key()) + ": does not parse");
      continue;
    }
    pipelines_[key].retained_from = stored->horizon.retained_from;
    pipelines_[key].kept = stored->horizon.kept;
    if (stored->chunks > 0) {
      // The restore point's states, in chunks a warm copy does not hold: read them now (the
      // fence is ours, so the newest revision is the one loaded).
      auto ref = layout_.ParseCheckpointKey(kv->key());
      if (Status read =
              ReadChunks(*ref, kv->key(), stored->chunks, /*revision=*/0, &stored->checkpoint);
          !read.ok()) {
        if (read.code() != StatusCode::kDataLoss) return read;
        damage(key, read.message());
        continue;
      }
    }
    newest_checkpoints[key] = std::move(stored->checkpoint);
    auto part = parts.find(key);
    if (part != parts.end() && stored->progress &&
        kv->mod_revision() > part->second.progress_revision) {
      part->second.progress = stored->progress;
    }
  }
  std::vector<StoredPipeline> loaded;
  std::vector<UnreadableRecord> unreadable;
  for (auto& [key, part] : parts) {
    auto& [spec, progress, progress_revision] = part;
    if (!damaged.count(key) && (!spec || !progress)) {
      damage(key, std::string("it has ") + (spec ? "no progress" : "no spec") + " record");
    }
    StoredPipeline stored;
    if (!damaged.count(key)) {
      static_cast<PipelineProgress&>(stored.record) = *progress;
      stored.record.spec = std::move(*spec);
      stored.id_counter = counters_.count(key) ? counters_[key] : 0;
      const etcd::Horizon horizon = pipelines_[key].horizon();
      stored.retained_from = horizon.retained_from;
      for (const HistoryEntry& entry : histories[key]) {
        if (!horizon.Hides(entry.checkpoint_id, entry.kind)) stored.history.push_back(entry);
      }
      auto newest_checkpoint = newest_checkpoints.find(key);
      if (newest_checkpoint != newest_checkpoints.end() &&
          newest_checkpoint->second.checkpoint_id == stored.record.last_completed_id) {
        stored.newest = std::move(newest_checkpoint->second);
      }
      if (Status s = ValidateStored(stored); !s.ok()) {
        damage(key, "not valid: " + s.message());
      } else if (!histories[key].empty() &&
                 histories[key].back().checkpoint_id > stored.id_counter) {
        // An id above the counter would be handed out again.
        damage(key, "checkpoint " + std::to_string(histories[key].back().checkpoint_id) +
                        " is above its id counter " + std::to_string(stored.id_counter));
      }
    }
    pipelines_[key].has_record = true;  // so that its delete is planned like any other
    if (auto why = damaged.find(key); why != damaged.end()) {
      UnreadableRecord record;
      record.pipeline = key;
      if (spec) record.group = spec->alignment_group;
      record.reason = "pipeline " + Printable(key.ToString()) + " in " + where + ": " + why->second;
      unreadable.push_back(std::move(record));
      continue;
    }
    loaded.push_back(std::move(stored));
  }
  // A counter or history of a pipeline with no record at all (its spec and progress gone): its
  // ids are kept from being handed out again (the high-water mark), and a counter that does not
  // read is reported.
  for (const PipelineKey& key : counter_unreadable) {
    if (parts.count(key)) continue;
    UnreadableRecord record;
    record.pipeline = key;
    record.reason = "pipeline " + Printable(key.ToString()) + " in " + where + ": " + damaged[key];
    unreadable.push_back(std::move(record));
  }
  for (const UnreadableRecord& record : unreadable) {
    spdlog::error("store: {} is quarantined (UNREADABLE; every other pipeline runs): {}",
                  Printable(record.pipeline.ToString()), record.reason);
  }
  for (const UnreadableRecord& record : unknown) {
    spdlog::warn("store: {}", record.reason);
  }
  unreadable.insert(unreadable.end(), unknown.begin(), unknown.end());
  {
    MutexLock unreadable_lock(unreadable_mu_);
    unreadable_pipelines_ = std::move(unreadable);
  }
  high_water_ = std::max(high_water_, high_water);
  {
    MutexLock horizon_lock(horizon_mu_);
    horizons_.clear();
    for (const auto& [key, view] : pipelines_) horizons_[key] = view.horizon();
  }
  view_loaded_ = true;
  return loaded;
}

Result<std::vector<StoredGroup>> EtcdBackend::ReadGroups() {
  int64_t revision = 0;
  auto kvs = RangeAll(layout_.GroupsPrefix(), PrefixEnd(layout_.GroupsPrefix()),
                      /*keys_only=*/false, &revision);
  if (!kvs.ok()) return kvs.status();
  std::vector<StoredGroup> groups;
  std::vector<UnreadableRecord> unreadable;
  for (const KeyValue& kv : *kvs) {
    const std::string name = kv.key().substr(layout_.GroupsPrefix().size());
    auto group = etcd::DecodeGroup(kv.value(), name);
    if (!group) {
      // The group alone is quarantined (its members wait for it).
      UnreadableRecord record;
      record.kind = UnreadableRecord::Kind::kGroup;
      record.group = name;
      record.reason =
          "alignment group " + Printable(kv.key()) + " in " + name_ + ": does not parse";
      spdlog::error("store: alignment group {} is quarantined (UNREADABLE): {}", Printable(name),
                    record.reason);
      unreadable.push_back(std::move(record));
      continue;
    }
    groups.push_back(std::move(*group));
  }
  MutexLock unreadable_lock(unreadable_mu_);
  unreadable_groups_ = std::move(unreadable);
  return groups;  // in key order: name order
}

Result<std::vector<StoredGroup>> EtcdBackend::LoadGroups() { return ReadGroups(); }

Status EtcdBackend::LoadGroupView() {
  auto groups = ReadGroups();
  if (!groups.ok()) return groups.status();
  groups_.clear();
  for (StoredGroup& group : *groups) {
    std::string name = group.spec.name;
    groups_.emplace(std::move(name), std::move(group));
  }
  groups_loaded_ = true;
  return Status::Ok();
}

std::vector<UnreadableRecord> EtcdBackend::UnreadableRecords() {
  MutexLock lock(unreadable_mu_);
  std::vector<UnreadableRecord> all = unreadable_pipelines_;
  all.insert(all.end(), unreadable_groups_.begin(), unreadable_groups_.end());
  return all;
}

Result<int64_t> EtcdBackend::LoadIdCounter(const PipelineKey& key) {
  RangeRequest request;
  request.set_key(layout_.CounterKey(key));
  auto response = client_->Range(request);
  if (!response.ok()) return response.status();
  if (response->kvs().empty()) return int64_t{0};
  int64_t value = 0;
  if (ParseCounter(response->kvs(0).value(), &value)) return value;
  // A counter that does not read: nothing below the store's high-water mark is safe to hand out,
  // so the pipeline goes on above it.
  RangeRequest high_water;
  high_water.set_key(layout_.HighWaterKey());
  auto mark = client_->Range(high_water);
  if (!mark.ok()) return mark.status();
  int64_t floor = 0;
  if (!mark->kvs().empty() && !ParseCounter(mark->kvs(0).value(), &floor)) {
    return Status::DataLoss("the ids' high-water mark " + high_water.key() + " in " + name_ +
                            " is not a number");
  }
  spdlog::warn(
      "store: the id counter {} in {} is not a number; ids go on above the store's "
      "high-water mark {}",
      Printable(request.key()), name_, floor);
  return floor;
}

Status EtcdBackend::ReadChunks(const etcd::Layout::CheckpointRef& ref, const std::string& key,
                               int count, int64_t revision, CompletedCheckpoint* checkpoint) {
  RangeRequest chunks;
  const std::string prefix = layout_.ChunkPrefix(ref.key, ref.id);
  chunks.set_key(prefix);
  chunks.set_range_end(PrefixEnd(prefix));
  chunks.set_revision(revision);
  auto parts = client_->Range(chunks);
  if (!parts.ok()) return parts.status();
  if (parts->kvs_size() != count) {
    return Status::Internal("checkpoint " + key + " in " + name_ + " names " +
                            std::to_string(count) + " chunks; " +
                            std::to_string(parts->kvs_size()) + " are stored");
  }
  for (const KeyValue& part : parts->kvs()) {
    if (!etcd::DecodeChunk(part.value(), &checkpoint->task_states, &checkpoint->task_figures)) {
      return Status::Internal("unreadable chunk " + part.key() + " in " + name_);
    }
  }
  return Status::Ok();
}

Result<std::vector<CompletedCheckpoint>> EtcdBackend::ListCompleted(const PipelineKey& key,
                                                                    int limit, int64_t before_id) {
  etcd::Horizon horizon;  // what it hides is out of the history, stored or not
  {
    MutexLock lock(horizon_mu_);
    auto it = horizons_.find(key);
    if (it != horizons_.end()) horizon = it->second;
  }
  const std::string prefix = layout_.CheckpointPrefix(key);
  RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(before_id > 0 ? layout_.CheckpointBound(key, before_id)
                                      : PrefixEnd(prefix));
  request.set_sort_order(RangeRequest::DESCEND);
  request.set_sort_target(RangeRequest::KEY);
  std::vector<CompletedCheckpoint> out;
  // Page by page (newest first, at the first page's revision) until `limit` are found in the
  // history: the ones out of it that are not deleted yet are skipped.
  while (true) {
    if (limit > 0) request.set_limit(limit - static_cast<int>(out.size()));
    auto response = client_->Range(request);
    if (!response.ok()) return response.status();
    if (request.revision() == 0) request.set_revision(response->header().revision());
    for (const KeyValue& kv : response->kvs()) {
      auto ref = layout_.ParseCheckpointKey(kv.key());
      if (!ref) return Status::Internal("unknown key " + kv.key() + " in " + name_);
      if (horizon.Hides(ref->id, ref->kind)) continue;
      auto stored = etcd::DecodeCheckpoint(kv.value());
      if (!stored) return Status::Internal("unreadable checkpoint " + kv.key() + " in " + name_);
      if (stored->chunks > 0) {
        Status read =
            ReadChunks(*ref, kv.key(), stored->chunks, request.revision(), &stored->checkpoint);
        if (!read.ok()) return read;
      }
      out.push_back(std::move(stored->checkpoint));
    }
    const bool full = limit > 0 && out.size() >= static_cast<size_t>(limit);
    if (full || !response->more() || response->kvs().empty()) break;
    request.set_range_end(response->kvs().rbegin()->key());  // below the last one seen
  }
  return out;
}

}  // namespace ckpt
