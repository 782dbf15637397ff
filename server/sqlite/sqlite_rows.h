#pragma once
// How the SQLite store lays the daemon's types out in rows: stored integers for enums, JSON for
// lists and maps, and the pipelines table's columns in one order that binding and reading share.
// Pure functions over a prepared statement; no I/O of their own.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/types.h"
#include "sqlite/sqlite_db.h"

namespace ckpt::sqlite {

// Stored integers are spelled out rather than static_cast, so reordering an enum cannot silently
// change the meaning of rows already on disk.
int64_t KindToInt(CheckpointKind kind);
std::optional<CheckpointKind> KindFromInt(int64_t value);
int64_t CommitStatusToInt(CommitStatus status);
std::optional<CommitStatus> CommitStatusFromInt(int64_t value);
int64_t StickyToInt(StickyState sticky);
std::optional<StickyState> StickyFromInt(int64_t value);

// JSON rather than a joined string: any id round-trips, and an empty list is distinct from [""].
// Text that is not valid UTF-8 fails the one write (INVALID_ARGUMENT), never the daemon.
Result<std::string> TaskIdsToJson(const std::vector<std::string>& task_ids);
// Every task's state and figures (store/task_json.h).
Result<std::string> TaskStatesToJson(const CompletedCheckpoint& checkpoint);
// A JSON array of ids ("[]", "[3,7]"): what json(ids).dump() writes, without the object.
std::string IdsToJson(const std::vector<int64_t>& ids);
// nullopt: the text is not what the To* functions write.
std::optional<std::vector<int64_t>> IdsFromJson(const std::string& text);
std::optional<std::vector<std::string>> TaskIdsFromJson(const std::string& text);
// False: the text is not what TaskStatesToJson writes. `figures` may be null (not wanted).
bool TaskStatesFromJson(const std::string& text, std::map<std::string, TaskState>* states,
                        std::vector<TaskFigures>* figures);

// The pipelines table's columns, in the order BindRecord binds (?1..?29) and ReadRecord reads
// (0..28). Columns kFirstProgressColumn.. are the progress (PipelineProgress).
extern const char* const kRecordColumns[];
constexpr int kRecordColumnCount = 29;
constexpr int kFirstProgressColumn = 13;

// "<prefix>job_id, <prefix>pipeline_id, ..." over kRecordColumns.
std::string JoinColumns(const std::string& prefix);
// The progress columns as ?first..?first+15.
void BindProgress(Stmt& stmt, const PipelineProgress& p, int first);
// Binds ?1..?29 in kRecordColumns order.
void BindRecord(Stmt& stmt, const PipelineRecord& r, const std::string& task_ids_json);
// Reads columns 0..26 in kRecordColumns order; INTERNAL names what is unreadable, and where
// (`path`).
Result<PipelineRecord> ReadRecord(const Stmt& stmt, const std::string& path);

}  // namespace ckpt::sqlite
