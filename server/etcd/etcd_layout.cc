#include "etcd/etcd_layout.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "store/task_json.h"

namespace ckpt::etcd {

namespace {

using nlohmann::json;

std::string Padded(int64_t value, int width) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%0*lld", width, static_cast<long long>(value));
  return buffer;
}

std::string Pair(const PipelineKey& key) { return key.job_id + "/" + key.pipeline_id; }

// "<job>/<pipeline>" followed by `rest`: splits off the two ids (neither empty, neither with '/').
std::optional<PipelineKey> TakePair(std::string_view text, std::string_view* rest) {
  const size_t first = text.find('/');
  if (first == std::string_view::npos || first == 0) return std::nullopt;
  const size_t second = text.find('/', first + 1);
  const size_t end = second == std::string_view::npos ? text.size() : second;
  if (end == first + 1) return std::nullopt;
  PipelineKey key{std::string(text.substr(0, first)),
                  std::string(text.substr(first + 1, end - first - 1))};
  *rest = second == std::string_view::npos ? std::string_view() : text.substr(second);
  return key;
}

std::optional<int64_t> ParseNumber(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

const char* StickyName(StickyState sticky) {
  switch (sticky) {
    case StickyState::kActive: return "ACTIVE";
    case StickyState::kPaused: return "PAUSED";
    case StickyState::kFailed: return "FAILED";
    case StickyState::kStopped: return "STOPPED";
  }
  return "ACTIVE";
}

std::optional<StickyState> StickyFromName(const std::string& name) {
  for (StickyState s :
       {StickyState::kActive, StickyState::kPaused, StickyState::kFailed, StickyState::kStopped}) {
    if (name == StickyName(s)) return s;
  }
  return std::nullopt;
}

std::optional<CheckpointKind> KindFromName(const std::string& name) {
  for (CheckpointKind k : {CheckpointKind::kCheckpoint, CheckpointKind::kSavepoint,
                           CheckpointKind::kSavepointAndStop}) {
    if (name == CheckpointKindName(k)) return k;
  }
  return std::nullopt;
}

char KindLetter(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kCheckpoint: return 'c';
    case CheckpointKind::kSavepoint: return 's';
    case CheckpointKind::kSavepointAndStop: return 'x';
  }
  return 'c';
}

std::optional<CheckpointKind> KindFromLetter(char letter) {
  switch (letter) {
    case 'c': return CheckpointKind::kCheckpoint;
    case 's': return CheckpointKind::kSavepoint;
    case 'x': return CheckpointKind::kSavepointAndStop;
    default: return std::nullopt;
  }
}

}  // namespace

std::string Layout::ElectionKey(int64_t lease_id) const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(lease_id));
  return ElectionPrefix() + hex;
}
std::string Layout::SpecKey(const PipelineKey& key) const { return PipelinePrefix(key) + "spec"; }
std::string Layout::ProgressKey(const PipelineKey& key) const {
  return PipelinePrefix(key) + "progress";
}
std::string Layout::PipelinePrefix(const PipelineKey& key) const {
  return PipelinesPrefix() + Pair(key) + "/";
}
std::string Layout::CounterKey(const PipelineKey& key) const {
  return CountersPrefix() + Pair(key);
}
std::string Layout::CheckpointPrefix(const PipelineKey& key) const {
  return CheckpointsPrefix() + Pair(key) + "/";
}
std::string Layout::CheckpointKey(const PipelineKey& key, int64_t id, CheckpointKind kind,
                                  bool chunked) const {
  return CheckpointBound(key, id) + "-" + KindLetter(kind) + (chunked ? "+" : "");
}
std::string Layout::CheckpointBound(const PipelineKey& key, int64_t id) const {
  return CheckpointPrefix(key) + Padded(id, 19);
}
std::string Layout::ChunksPrefix(const PipelineKey& key) const {
  return prefix_ + "/chunks/" + Pair(key) + "/";
}
std::string Layout::ChunkPrefix(const PipelineKey& key, int64_t id) const {
  return ChunksPrefix(key) + Padded(id, 19) + "/";
}
std::string Layout::ChunkKey(const PipelineKey& key, int64_t id, int n) const {
  return ChunkPrefix(key, id) + Padded(n, 6);
}

bool Layout::IsKnownKey(const std::string& etcd_key) const {
  for (const std::string& single : {LayoutKey(), ProbeKey(), WriterKey(), HighWaterKey()}) {
    if (etcd_key == single) return true;
  }
  if (ParsePipelineKey(etcd_key) || ParseCounterKey(etcd_key) || ParseCheckpointKey(etcd_key)) {
    return true;
  }
  for (const std::string& prefix : {ElectionPrefix(), GroupsPrefix(), ChunksRoot()}) {
    if (etcd_key.size() > prefix.size() && etcd_key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::optional<Layout::PipelineRecordKey> Layout::ParsePipelineKey(
    const std::string& etcd_key) const {
  const std::string prefix = PipelinesPrefix();
  if (etcd_key.rfind(prefix, 0) != 0) return std::nullopt;
  std::string_view rest;
  auto key = TakePair(std::string_view(etcd_key).substr(prefix.size()), &rest);
  if (!key) return std::nullopt;
  if (rest == "/spec") return PipelineRecordKey{*key, true};
  if (rest == "/progress") return PipelineRecordKey{*key, false};
  return std::nullopt;
}

std::optional<PipelineKey> Layout::ParseCounterKey(const std::string& etcd_key) const {
  const std::string prefix = CountersPrefix();
  if (etcd_key.rfind(prefix, 0) != 0) return std::nullopt;
  std::string_view rest;
  auto key = TakePair(std::string_view(etcd_key).substr(prefix.size()), &rest);
  if (!key || !rest.empty()) return std::nullopt;
  return key;
}

std::optional<Layout::CheckpointRef> Layout::ParseCheckpointKey(const std::string& etcd_key) const {
  const std::string prefix = CheckpointsPrefix();
  if (etcd_key.rfind(prefix, 0) != 0) return std::nullopt;
  std::string_view rest;
  auto key = TakePair(std::string_view(etcd_key).substr(prefix.size()), &rest);
  // "/<19 digits>-<k>" or "/<19 digits>-<k>+"
  if (rest.size() < 22 || rest.size() > 23 || rest[0] != '/' || rest[20] != '-') {
    return std::nullopt;
  }
  auto id = ParseNumber(rest.substr(1, 19));
  auto kind = KindFromLetter(rest[21]);
  if (!id || !kind) return std::nullopt;
  const bool chunked = rest.size() == 23;
  if (chunked && rest[22] != '+') return std::nullopt;
  return CheckpointRef{*key, *id, *kind, chunked};
}

std::string EncodeGroup(const StoredGroup& g) {
  json v{{"interval_ms", g.spec.interval_ms},
         {"timeout_ms", g.spec.timeout_ms},
         {"min_pause_ms", g.spec.min_pause_ms},
         {"position_interval", g.spec.position_interval},
         {"commit_timeout_ms", g.spec.commit_timeout_ms},
         {"from_config", g.from_config},
         {"id_counter", g.progress.id_counter},
         {"last_round_id", g.progress.last_round_id},
         {"last_position", g.progress.last_position},
         {"last_completed_at_ms", g.progress.last_completed_at_ms}};
  // Written only when set: a value without them is what a daemon before them wrote.
  if (g.spec.max_overhead != 0) v["max_overhead"] = g.spec.max_overhead;
  if (g.spec.max_interval_ms != 0) v["max_interval_ms"] = g.spec.max_interval_ms;
  return v.dump();
}

std::optional<StoredGroup> DecodeGroup(const std::string& value, const std::string& name) {
  json v = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object()) return std::nullopt;
  try {
    StoredGroup g;
    g.spec.name = name;
    g.spec.interval_ms = v.at("interval_ms").get<int64_t>();
    g.spec.timeout_ms = v.at("timeout_ms").get<int64_t>();
    g.spec.min_pause_ms = v.at("min_pause_ms").get<int64_t>();
    g.spec.position_interval = v.at("position_interval").get<int64_t>();
    g.spec.commit_timeout_ms = v.value("commit_timeout_ms", int64_t{0});
    g.spec.max_overhead = v.value("max_overhead", 0.0);
    g.spec.max_interval_ms = v.value("max_interval_ms", int64_t{0});
    g.from_config = v.at("from_config").get<bool>();
    g.progress.id_counter = v.at("id_counter").get<int64_t>();
    g.progress.last_round_id = v.at("last_round_id").get<int64_t>();
    g.progress.last_position = v.at("last_position").get<int64_t>();
    g.progress.last_completed_at_ms = v.at("last_completed_at_ms").get<int64_t>();
    return g;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

Result<std::string> EncodeSpec(const PipelineSpec& spec) {
  try {
    json v{{"task_ids", spec.task_ids},
           {"interval_ms", spec.interval_ms},
           {"timeout_ms", spec.timeout_ms},
           {"min_pause_ms", spec.min_pause_ms},
           {"tolerable_failures", spec.tolerable_failures},
           {"retained", spec.retained}};
    // Written only when set: a value without it is what a daemon before positions wrote.
    if (spec.position_interval != 0) v["position_interval"] = spec.position_interval;
    if (!spec.alignment_group.empty()) v["alignment_group"] = spec.alignment_group;
    if (spec.commit_timeout_ms != 0) v["commit_timeout_ms"] = spec.commit_timeout_ms;
    if (spec.max_overhead != 0) v["max_overhead"] = spec.max_overhead;
    if (spec.max_interval_ms != 0) v["max_interval_ms"] = spec.max_interval_ms;
    return v.dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument("spec of " + spec.key.ToString() +
                                   " cannot be stored: " + e.what());
  }
}

std::optional<PipelineSpec> DecodeSpec(const std::string& value, const PipelineKey& key) {
  json v = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object() || !v.contains("task_ids") || !v["task_ids"].is_array()) return std::nullopt;
  try {
    PipelineSpec spec;
    spec.key = key;
    spec.task_ids = v["task_ids"].get<std::vector<std::string>>();
    spec.interval_ms = v.at("interval_ms").get<int64_t>();
    spec.timeout_ms = v.at("timeout_ms").get<int64_t>();
    spec.min_pause_ms = v.at("min_pause_ms").get<int64_t>();
    spec.tolerable_failures = v.at("tolerable_failures").get<int32_t>();
    spec.retained = v.at("retained").get<int32_t>();
    spec.position_interval = v.value("position_interval", int64_t{0});
    spec.alignment_group = v.value("alignment_group", std::string());
    spec.commit_timeout_ms = v.value("commit_timeout_ms", int64_t{0});
    spec.max_overhead = v.value("max_overhead", 0.0);
    spec.max_interval_ms = v.value("max_interval_ms", int64_t{0});
    return spec;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

namespace {

json RestoreFromJson(const CheckpointRef& ref) {
  return {{"job_id", ref.key.job_id},
          {"pipeline_id", ref.key.pipeline_id},
          {"checkpoint_id", ref.checkpoint_id}};
}

json ProgressJson(const PipelineProgress& p) {
  json v = {{"generation", p.generation},
            {"sticky", StickyName(p.sticky)},
            {"completed_count", p.counters.completed_count},
            {"failed_count", p.counters.failed_count},
            {"expired_count", p.counters.expired_count},
            {"consecutive_failures", p.counters.consecutive_failures},
            {"last_completed_id", p.last_completed_id},
            {"last_completed_kind", CheckpointKindName(p.last_completed_kind)},
            {"last_completed_at_ms", p.last_completed_at_ms},
            {"from_config", p.from_config}};
  if (p.restore_from) v["restore_from"] = RestoreFromJson(*p.restore_from);
  if (!p.released_ids.empty()) v["released"] = p.released_ids;
  // The COMMITTED mark: only once a pipeline has one (a value without it is what a daemon before
  // the commit phase wrote).
  if (p.last_committed_id != 0) {
    v["last_committed_id"] = p.last_committed_id;
    v["last_committed_at_ms"] = p.last_committed_at_ms;
  }
  // Likewise the unrestorable marks (docs/PROTOCOL.md, "Verified restore").
  if (!p.unrestorable_ids.empty()) v["unrestorable"] = p.unrestorable_ids;
  if (p.restore_from_failed) v["restore_from_failed"] = true;
  return v;
}

// The progress as a checkpoint's value carries it, about 60 bytes instead of 270 (a completion's
// one write; etcd's cost grows with the bytes): what equals its default (0, ACTIVE, false) or
// the checkpoint's own fields (the last completed one is normally this one) is left out.
json CompactProgressJson(const PipelineProgress& p, const CompletedCheckpoint& self) {
  json v{{"generation", p.generation}, {"completed_count", p.counters.completed_count}};
  if (p.sticky != StickyState::kActive) v["sticky"] = StickyName(p.sticky);
  if (p.counters.failed_count != 0) v["failed_count"] = p.counters.failed_count;
  if (p.counters.expired_count != 0) v["expired_count"] = p.counters.expired_count;
  if (p.counters.consecutive_failures != 0) {
    v["consecutive_failures"] = p.counters.consecutive_failures;
  }
  if (p.last_completed_id != self.checkpoint_id) v["last_completed_id"] = p.last_completed_id;
  if (p.last_completed_kind != self.kind) {
    v["last_completed_kind"] = CheckpointKindName(p.last_completed_kind);
  }
  if (p.last_completed_at_ms != self.finished_at_ms) {
    v["last_completed_at_ms"] = p.last_completed_at_ms;
  }
  if (p.from_config) v["from_config"] = true;
  if (p.restore_from) v["restore_from"] = RestoreFromJson(*p.restore_from);
  if (!p.released_ids.empty()) v["released"] = p.released_ids;
  // The COMMITTED mark: only once a pipeline has one (a value without it is what a daemon before
  // the commit phase wrote).
  if (p.last_committed_id != 0) {
    v["last_committed_id"] = p.last_committed_id;
    v["last_committed_at_ms"] = p.last_committed_at_ms;
  }
  // Likewise the unrestorable marks (docs/PROTOCOL.md, "Verified restore").
  if (!p.unrestorable_ids.empty()) v["unrestorable"] = p.unrestorable_ids;
  if (p.restore_from_failed) v["restore_from_failed"] = true;
  return v;
}

// Either form: the progress key's, whole (`self` null), or a checkpoint's, compact.
std::optional<PipelineProgress> ProgressFromJson(const json& v, const CompletedCheckpoint* self) {
  if (!v.is_object()) return std::nullopt;
  try {
    PipelineProgress p;
    p.generation = v.at("generation").get<int64_t>();
    auto sticky = StickyFromName(v.value("sticky", std::string(StickyName(StickyState::kActive))));
    auto kind = self && !v.contains("last_completed_kind")
                    ? std::optional<CheckpointKind>(self->kind)
                    : KindFromName(v.at("last_completed_kind").get<std::string>());
    if (!sticky || !kind) return std::nullopt;
    p.sticky = *sticky;
    p.last_completed_kind = *kind;
    p.counters.completed_count = v.value("completed_count", int64_t{0});
    p.counters.failed_count = v.value("failed_count", int64_t{0});
    p.counters.expired_count = v.value("expired_count", int64_t{0});
    p.counters.consecutive_failures = v.value("consecutive_failures", int64_t{0});
    p.last_completed_id = self ? v.value("last_completed_id", self->checkpoint_id)
                               : v.at("last_completed_id").get<int64_t>();
    p.last_completed_at_ms = self ? v.value("last_completed_at_ms", self->finished_at_ms)
                                  : v.at("last_completed_at_ms").get<int64_t>();
    p.from_config = v.value("from_config", false);
    if (v.contains("released")) p.released_ids = v.at("released").get<std::vector<int64_t>>();
    p.last_committed_id = v.value("last_committed_id", int64_t{0});
    p.last_committed_at_ms = v.value("last_committed_at_ms", int64_t{0});
    if (v.contains("unrestorable")) {
      p.unrestorable_ids = v.at("unrestorable").get<std::vector<int64_t>>();
    }
    if (v.contains("restore_from_failed")) {
      p.restore_from_failed = v.at("restore_from_failed").get<bool>();
    }
    if (v.contains("restore_from")) {
      const json& r = v.at("restore_from");
      p.restore_from =
          CheckpointRef{{r.at("job_id").get<std::string>(), r.at("pipeline_id").get<std::string>()},
                        r.at("checkpoint_id").get<int64_t>()};
    }
    return p;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string EncodeProgress(const PipelineProgress& p) { return ProgressJson(p).dump(); }

std::optional<PipelineProgress> DecodeProgress(const std::string& value) {
  return ProgressFromJson(json::parse(value, nullptr, /*allow_exceptions=*/false), nullptr);
}

bool Horizon::Hides(int64_t checkpoint_id, CheckpointKind kind) const {
  return kind == CheckpointKind::kCheckpoint && checkpoint_id < retained_from &&
         !std::binary_search(kept.begin(), kept.end(), checkpoint_id);
}

Result<std::string> EncodeCheckpoint(const CompletedCheckpoint& cp,
                                     const PipelineProgress& progress, const Horizon& horizon,
                                     size_t max_value_bytes,
                                     std::vector<std::string>* chunk_values) {
  chunk_values->clear();
  try {
    json head{{"id", cp.checkpoint_id},
              {"kind", CheckpointKindName(cp.kind)},
              {"triggered_at_ms", cp.triggered_at_ms},
              {"finished_at_ms", cp.finished_at_ms},
              {"location", cp.location},
              {"progress", CompactProgressJson(progress, cp)},
              {"retained_from", horizon.retained_from}};
    if (!horizon.kept.empty()) head["kept"] = horizon.kept;
    if (cp.position != 0) head["position"] = cp.position;
    if (!cp.alignment_group.empty()) head["alignment_group"] = cp.alignment_group;
    // Written COMMITTING; the progress's COMMITTED mark says when it is COMMITTED (the value is
    // never rewritten: ApplyProgressMarks reads the two together).
    if (cp.commit_status != CommitStatus::kNone) {
      head["commit_status"] = CommitStatusName(cp.commit_status);
    }
    json states = TasksJson(cp);  // each task's state and figures
    std::string inline_states = states.dump();
    if (inline_states.size() <= max_value_bytes) {
      head["task_states"] = std::move(states);
      return head.dump();
    }
    // Too large for one value: chunks of whole task entries, each about max_value_bytes.
    json chunk = json::object();
    size_t chunk_bytes = 0;
    for (auto& [task, entry] : states.items()) {
      const size_t entry_bytes = entry.dump().size() + task.size() + 8;
      if (chunk_bytes > 0 && chunk_bytes + entry_bytes > max_value_bytes) {
        chunk_values->push_back(chunk.dump());
        chunk = json::object();
        chunk_bytes = 0;
      }
      chunk[task] = std::move(entry);
      chunk_bytes += entry_bytes;
    }
    if (chunk_bytes > 0) chunk_values->push_back(chunk.dump());
    head["chunks"] = chunk_values->size();
    return head.dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument("checkpoint " + std::to_string(cp.checkpoint_id) +
                                   " cannot be stored: " + e.what());
  }
}

std::optional<StoredCheckpoint> DecodeCheckpoint(const std::string& value) {
  json v = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object()) return std::nullopt;
  try {
    StoredCheckpoint stored;
    CompletedCheckpoint& cp = stored.checkpoint;
    cp.checkpoint_id = v.at("id").get<int64_t>();
    auto kind = KindFromName(v.at("kind").get<std::string>());
    if (!kind) return std::nullopt;
    cp.kind = *kind;
    cp.triggered_at_ms = v.at("triggered_at_ms").get<int64_t>();
    cp.finished_at_ms = v.at("finished_at_ms").get<int64_t>();
    cp.location = v.at("location").get<std::string>();
    cp.position = v.value("position", int64_t{0});
    cp.alignment_group = v.value("alignment_group", std::string());
    const std::string commit = v.value("commit_status", std::string("NONE"));
    if (commit == "COMMITTING") {
      cp.commit_status = CommitStatus::kCommitting;
    } else if (commit == "COMMITTED") {
      cp.commit_status = CommitStatus::kCommitted;
    } else if (commit != "NONE") {
      return std::nullopt;
    }
    if (v.contains("progress")) {
      stored.progress = ProgressFromJson(v["progress"], &cp);
      if (!stored.progress) return std::nullopt;
    }
    stored.horizon.retained_from = v.value("retained_from", int64_t{0});
    if (v.contains("kept")) {
      stored.horizon.kept = v["kept"].get<std::vector<int64_t>>();
      std::sort(stored.horizon.kept.begin(), stored.horizon.kept.end());
    }
    if (v.contains("chunks")) {
      stored.chunks = v["chunks"].get<int>();
      if (stored.chunks < 0) return std::nullopt;
    } else if (!ReadTasksJson(v.at("task_states"), &cp.task_states, &cp.task_figures)) {
      return std::nullopt;
    }
    return stored;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool DecodeChunk(const std::string& value, std::map<std::string, TaskState>* states,
                 std::vector<TaskFigures>* figures) {
  json v = json::parse(value, nullptr, /*allow_exceptions=*/false);
  try {
    return ReadTasksJson(v, states, figures);
  } catch (const json::exception&) {
    return false;
  }
}

}  // namespace ckpt::etcd
