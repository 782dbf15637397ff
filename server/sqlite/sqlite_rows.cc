#include "sqlite/sqlite_rows.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "store/task_json.h"

namespace ckpt::sqlite {

using nlohmann::json;

int64_t KindToInt(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kCheckpoint: return 0;
    case CheckpointKind::kSavepoint: return 1;
    case CheckpointKind::kSavepointAndStop: return 2;
  }
  return 0;
}

std::optional<CheckpointKind> KindFromInt(int64_t value) {
  switch (value) {
    case 0: return CheckpointKind::kCheckpoint;
    case 1: return CheckpointKind::kSavepoint;
    case 2: return CheckpointKind::kSavepointAndStop;
    default: return std::nullopt;
  }
}

int64_t CommitStatusToInt(CommitStatus status) {
  switch (status) {
    case CommitStatus::kNone: return 0;
    case CommitStatus::kCommitting: return 1;
    case CommitStatus::kCommitted: return 2;
  }
  return 0;
}

std::optional<CommitStatus> CommitStatusFromInt(int64_t value) {
  switch (value) {
    case 0: return CommitStatus::kNone;
    case 1: return CommitStatus::kCommitting;
    case 2: return CommitStatus::kCommitted;
    default: return std::nullopt;
  }
}

int64_t StickyToInt(StickyState sticky) {
  switch (sticky) {
    case StickyState::kActive: return 0;
    case StickyState::kPaused: return 1;
    case StickyState::kFailed: return 2;
    case StickyState::kStopped: return 3;
  }
  return 0;
}

std::optional<StickyState> StickyFromInt(int64_t value) {
  switch (value) {
    case 0: return StickyState::kActive;
    case 1: return StickyState::kPaused;
    case 2: return StickyState::kFailed;
    case 3: return StickyState::kStopped;
    default: return std::nullopt;
  }
}

// dump() throws on invalid UTF-8; that must fail the one write, never the daemon.
Result<std::string> TaskIdsToJson(const std::vector<std::string>& task_ids) {
  try {
    return json(task_ids).dump();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("task_ids cannot be stored: ") + e.what());
  }
}

std::string IdsToJson(const std::vector<int64_t>& ids) {
  std::string text = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) text.push_back(',');
    text.append(std::to_string(ids[i]));
  }
  text.push_back(']');
  return text;
}

std::optional<std::vector<int64_t>> IdsFromJson(const std::string& text) {
  auto ids = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!ids.is_array()) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& id : ids) {
    if (!id.is_number_integer()) return std::nullopt;
    out.push_back(id.get<int64_t>());
  }
  return out;
}

Result<std::string> TaskStatesToJson(const CompletedCheckpoint& checkpoint) {
  // Written straight, without the object TasksJson builds: one a commit, on the store's writer.
  std::string text;
  if (!WriteTasksJson(checkpoint, &text)) {
    return Status::InvalidArgument("task states cannot be stored: a string is not valid UTF-8");
  }
  return text;
}

std::optional<std::vector<std::string>> TaskIdsFromJson(const std::string& text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_array()) return std::nullopt;
  std::vector<std::string> ids;
  ids.reserve(value.size());
  for (const auto& id : value) {
    if (!id.is_string()) return std::nullopt;
    ids.push_back(id.get<std::string>());
  }
  return ids;
}

bool TaskStatesFromJson(const std::string& text, std::map<std::string, TaskState>* states,
                        std::vector<TaskFigures>* figures) {
  return ReadTasksJsonText(text, states, figures);
}

namespace {

std::string RestoreFromToJson(const std::optional<CheckpointRef>& ref) {
  if (!ref) return "";
  return nlohmann::json{{"job_id", ref->key.job_id},
                        {"pipeline_id", ref->key.pipeline_id},
                        {"checkpoint_id", ref->checkpoint_id}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::optional<CheckpointRef>> RestoreFromFromJson(const std::string& text) {
  if (text.empty()) return std::optional<CheckpointRef>();
  auto v = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object()) return std::nullopt;
  auto job = v.find("job_id"), pipeline = v.find("pipeline_id"), id = v.find("checkpoint_id");
  if (job == v.end() || pipeline == v.end() || id == v.end() || !job->is_string() ||
      !pipeline->is_string() || !id->is_number_integer()) {
    return std::nullopt;
  }
  return std::optional<CheckpointRef>(
      CheckpointRef{{job->get<std::string>(), pipeline->get<std::string>()}, id->get<int64_t>()});
}

}  // namespace

// clang-format off
const char* const kRecordColumns[kRecordColumnCount] = {
    "job_id", "pipeline_id", "task_ids", "interval_ms", "timeout_ms", "min_pause_ms",
    "tolerable_failures", "retained", "position_interval", "alignment_group",
    "commit_timeout_ms", "max_overhead", "max_interval_ms", "generation", "sticky_state",
    "completed_count", "failed_count",
    "expired_count", "consecutive_failures", "last_completed_id", "last_completed_kind",
    "last_completed_at_ms", "from_config", "restore_from", "released_ids", "last_committed_id",
    "last_committed_at_ms", "unrestorable_ids", "restore_from_failed"};
// clang-format on

std::string JoinColumns(const std::string& prefix) {
  std::string out;
  for (int i = 0; i < kRecordColumnCount; ++i) {
    if (i) out += ", ";
    out += prefix + kRecordColumns[i];
  }
  return out;
}

void BindProgress(Stmt& stmt, const PipelineProgress& p, int first) {
  stmt.Bind(first, p.generation);
  stmt.Bind(first + 1, StickyToInt(p.sticky));
  stmt.Bind(first + 2, p.counters.completed_count);
  stmt.Bind(first + 3, p.counters.failed_count);
  stmt.Bind(first + 4, p.counters.expired_count);
  stmt.Bind(first + 5, p.counters.consecutive_failures);
  stmt.Bind(first + 6, p.last_completed_id);
  stmt.Bind(first + 7, KindToInt(p.last_completed_kind));
  stmt.Bind(first + 8, p.last_completed_at_ms);
  stmt.Bind(first + 9, int64_t{p.from_config ? 1 : 0});
  stmt.Bind(first + 10, RestoreFromToJson(p.restore_from));
  stmt.Bind(first + 11, IdsToJson(p.released_ids));
  stmt.Bind(first + 12, p.last_committed_id);
  stmt.Bind(first + 13, p.last_committed_at_ms);
  stmt.Bind(first + 14, IdsToJson(p.unrestorable_ids));
  stmt.Bind(first + 15, int64_t{p.restore_from_failed ? 1 : 0});
}

void BindRecord(Stmt& stmt, const PipelineRecord& r, const std::string& task_ids_json) {
  stmt.Bind(1, r.spec.key.job_id);
  stmt.Bind(2, r.spec.key.pipeline_id);
  stmt.Bind(3, task_ids_json);
  stmt.Bind(4, r.spec.interval_ms);
  stmt.Bind(5, r.spec.timeout_ms);
  stmt.Bind(6, r.spec.min_pause_ms);
  stmt.Bind(7, int64_t{r.spec.tolerable_failures});
  stmt.Bind(8, int64_t{r.spec.retained});
  stmt.Bind(9, r.spec.position_interval);
  stmt.Bind(10, r.spec.alignment_group);
  stmt.Bind(11, r.spec.commit_timeout_ms);
  stmt.Bind(12, r.spec.max_overhead);
  stmt.Bind(13, r.spec.max_interval_ms);
  BindProgress(stmt, r.progress(), 14);
}

Result<PipelineRecord> ReadRecord(const Stmt& stmt, const std::string& path) {
  PipelineRecord r;
  r.spec.key.job_id = stmt.ColumnText(0);
  r.spec.key.pipeline_id = stmt.ColumnText(1);
  const std::string where = "pipeline " + r.spec.key.ToString() + " in " + path;
  // SQLite lets an INTEGER column hold text: a value that is not a number is damage, not 0.
  for (int col : {3, 4, 5, 6, 7, 8, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 25, 26, 28}) {
    if (!stmt.ColumnIsInt(col)) {
      return Status::Internal(std::string("column ") + kRecordColumns[col] + " of " + where +
                              " is not an integer");
    }
  }
  auto task_ids = TaskIdsFromJson(stmt.ColumnText(2));
  if (!task_ids) return Status::Internal("unreadable task_ids of " + where);
  r.spec.task_ids = std::move(*task_ids);
  r.spec.interval_ms = stmt.ColumnInt(3);
  r.spec.timeout_ms = stmt.ColumnInt(4);
  r.spec.min_pause_ms = stmt.ColumnInt(5);
  r.spec.tolerable_failures = static_cast<int32_t>(stmt.ColumnInt(6));
  r.spec.retained = static_cast<int32_t>(stmt.ColumnInt(7));
  r.spec.position_interval = stmt.ColumnInt(8);
  r.spec.alignment_group = stmt.ColumnText(9);
  r.spec.commit_timeout_ms = stmt.ColumnInt(10);
  // REAL, or an INTEGER a hand-written row may hold (0): anything else is damage.
  if (!stmt.ColumnIsNumber(11)) {
    return Status::Internal("column max_overhead of " + where + " is not a number");
  }
  r.spec.max_overhead = stmt.ColumnDouble(11);
  r.spec.max_interval_ms = stmt.ColumnInt(12);
  r.generation = stmt.ColumnInt(13);
  auto sticky = StickyFromInt(stmt.ColumnInt(14));
  if (!sticky) return Status::Internal("unknown sticky_state of " + where);
  r.sticky = *sticky;
  r.counters.completed_count = stmt.ColumnInt(15);
  r.counters.failed_count = stmt.ColumnInt(16);
  r.counters.expired_count = stmt.ColumnInt(17);
  r.counters.consecutive_failures = stmt.ColumnInt(18);
  r.last_completed_id = stmt.ColumnInt(19);
  auto kind = KindFromInt(stmt.ColumnInt(20));
  if (!kind) return Status::Internal("unknown last_completed_kind of " + where);
  r.last_completed_kind = *kind;
  r.last_completed_at_ms = stmt.ColumnInt(21);
  r.from_config = stmt.ColumnInt(22) != 0;
  auto restore_from = RestoreFromFromJson(stmt.ColumnText(23));
  if (!restore_from) return Status::Internal("unreadable restore_from of " + where);
  r.restore_from = std::move(*restore_from);
  auto released = IdsFromJson(stmt.ColumnText(24));
  if (!released) return Status::Internal("unreadable released_ids of " + where);
  r.released_ids = std::move(*released);
  r.last_committed_id = stmt.ColumnInt(25);
  r.last_committed_at_ms = stmt.ColumnInt(26);
  auto unrestorable = IdsFromJson(stmt.ColumnText(27));
  if (!unrestorable) return Status::Internal("unreadable unrestorable_ids of " + where);
  r.unrestorable_ids = std::move(*unrestorable);
  r.restore_from_failed = stmt.ColumnInt(28) != 0;
  return r;
}

}  // namespace ckpt::sqlite
