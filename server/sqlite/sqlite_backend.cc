// SqliteBackend (sqlite_backend.h): every SQL statement of the embedded store against its schema
// (sqlite_schema.cc): the writer connection's prepared statements and the batch that runs them
// (WriterConn, ApplyBatch), and the read connection's reads (ReaderConn: the load, the history, the
// id counter, the groups). One file because both connection structs are private to it and both
// sides' statements follow the same tables and column order: a change of the schema is a change
// here. The write and read halves could be split as the etcd backend's were, with the two structs
// in an internal header.
//
// Threading: as sqlite_backend.h says (ApplyBatch and WriterConn on the writer thread; the reads
// from any thread, under read_mu_).
#include "sqlite/sqlite_backend.h"

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/printable.h"
#include "core/spec_validation.h"
#include "sqlite/sqlite_rows.h"
#include "store/group_rules.h"

namespace ckpt {

using sqlite::Db;
using sqlite::ResetGuard;
using sqlite::Stmt;
using namespace sqlite;  // the row codecs (sqlite/sqlite_rows.h)

namespace {

// Prepares `sql` into `stmt`, keeping the first error.
void PrepareInto(Db& db, Stmt& stmt, const std::string& sql, Status& status) {
  if (!status.ok()) return;
  auto prepared = Stmt::Prepare(db, sql);
  if (!prepared.ok()) {
    status = prepared.status();
    return;
  }
  stmt = std::move(*prepared);
}

}  // namespace

// The writer connection and its cached statements: the writer thread's alone once Create returns.
// `db` is declared first so it is destroyed last, after the statements prepared on it.
struct SqliteBackend::WriterConn {
  Db db;
  Stmt begin, commit, rollback, savepoint, release, rollback_to;
  Stmt upsert_pipeline, update_progress, raise_counter, insert_checkpoint, trim_checkpoints;
  Stmt trim_unpinned;  // trim_checkpoints when no id is to be spared (nearly every commit)
  Stmt mark_committed;
  Stmt delete_pipeline, delete_checkpoints, delete_checkpoint, pipeline_exists, probe;
  Stmt upsert_group, delete_group, raise_group_counter, update_group_progress;
  Stmt raise_high_water, counter_to_high_water;

  Status Prepare() {
    Status s;
    PrepareInto(db, begin, "BEGIN IMMEDIATE", s);
    PrepareInto(db, commit, "COMMIT", s);
    PrepareInto(db, rollback, "ROLLBACK", s);
    PrepareInto(db, savepoint, "SAVEPOINT op", s);
    PrepareInto(db, release, "RELEASE op", s);
    PrepareInto(db, rollback_to, "ROLLBACK TO op", s);
    std::string params;
    std::string assignments;
    for (int i = 0; i < kRecordColumnCount; ++i) {
      params += (i ? ", ?" : "?") + std::to_string(i + 1);
      if (i < 2) continue;  // the key columns are what conflicts
      if (!assignments.empty()) assignments += ", ";
      assignments += std::string(kRecordColumns[i]) + " = excluded." + kRecordColumns[i];
    }
    PrepareInto(db, upsert_pipeline,
                "INSERT INTO pipelines (" + JoinColumns("") + ") VALUES (" + params +
                    ") ON CONFLICT (job_id, pipeline_id) DO UPDATE SET " + assignments,
                s);
    std::string progress_assignments;
    // After the key, ?1 and ?2: ?3.. in column order.
    for (int i = kFirstProgressColumn; i < kRecordColumnCount; ++i) {
      if (i > kFirstProgressColumn) progress_assignments += ", ";
      progress_assignments +=
          std::string(kRecordColumns[i]) + " = ?" + std::to_string(i - kFirstProgressColumn + 3);
    }
    PrepareInto(
        db, update_progress,
        "UPDATE pipelines SET " + progress_assignments + " WHERE job_id = ?1 AND pipeline_id = ?2",
        s);
    PrepareInto(db, probe,
                "INSERT INTO meta (key, value) VALUES ('probe', ?1) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                s);
    PrepareInto(db, raise_counter,
                "INSERT INTO id_counters (job_id, pipeline_id, counter) VALUES (?1, ?2, ?3) "
                // A counter that is not an integer (damaged; SQLite orders text above every
                // number) is replaced, so that the next load reads it again.
                "ON CONFLICT (job_id, pipeline_id) DO UPDATE SET counter = MAX("
                "CASE WHEN typeof(counter) = 'integer' THEN counter ELSE 0 END, excluded.counter) "
                // A counter already as high is not written again: a commit's id was reserved
                // before, and rewriting the row made every commit dirty its page.
                "WHERE typeof(counter) != 'integer' OR counter < excluded.counter",
                s);
    PrepareInto(
        db, insert_checkpoint,
        "INSERT INTO checkpoints (job_id, pipeline_id, checkpoint_id, kind, "
        "triggered_at_ms, finished_at_ms, location, task_states, position, alignment_group, "
        "commit_status, committed_at_ms) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        s);
    // The COMMITTED mark rides with the progress (PipelineProgress::last_committed_id): it also
    // marks its checkpoint's row, once.
    PrepareInto(db, mark_committed,
                "UPDATE checkpoints SET commit_status = 2, committed_at_ms = ?4 "
                "WHERE job_id = ?1 AND pipeline_id = ?2 AND checkpoint_id = ?3 "
                "AND commit_status = 1",
                s);
    // Deletes the plain checkpoints older than the ?3+1-th newest one; none if there are fewer
    // (the subquery is then NULL). Savepoints (kind != 0) are never trimmed, nor the ids of the
    // JSON array ?4 (restore points, CheckpointCommit::keep).
    PrepareInto(db, trim_checkpoints,
                "DELETE FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2 AND kind = 0 "
                "AND checkpoint_id < (SELECT checkpoint_id FROM checkpoints "
                "WHERE job_id = ?1 AND pipeline_id = ?2 AND kind = 0 "
                "ORDER BY checkpoint_id DESC LIMIT 1 OFFSET ?3) "
                "AND checkpoint_id NOT IN (SELECT value FROM json_each(?4))",
                s);
    PrepareInto(db, trim_unpinned,
                "DELETE FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2 AND kind = 0 "
                "AND checkpoint_id < (SELECT checkpoint_id FROM checkpoints "
                "WHERE job_id = ?1 AND pipeline_id = ?2 AND kind = 0 "
                "ORDER BY checkpoint_id DESC LIMIT 1 OFFSET ?3)",
                s);
    PrepareInto(db, delete_pipeline, "DELETE FROM pipelines WHERE job_id = ?1 AND pipeline_id = ?2",
                s);
    PrepareInto(db, delete_checkpoint,
                "DELETE FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2 "
                "AND checkpoint_id = ?3",
                s);
    PrepareInto(db, pipeline_exists,
                "SELECT 1 FROM pipelines WHERE job_id = ?1 AND pipeline_id = ?2", s);
    PrepareInto(db, delete_checkpoints,
                "DELETE FROM checkpoints WHERE job_id = ?1 AND pipeline_id = ?2", s);
    PrepareInto(db, upsert_group,
                "INSERT INTO alignment_groups (name, interval_ms, timeout_ms, min_pause_ms, "
                "position_interval, from_config, id_counter, last_round_id, last_position, "
                "last_completed_at_ms, commit_timeout_ms, max_overhead, max_interval_ms) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, 0, ?7, ?8, ?9) "
                "ON CONFLICT (name) DO UPDATE SET interval_ms = excluded.interval_ms, "
                "timeout_ms = excluded.timeout_ms, min_pause_ms = excluded.min_pause_ms, "
                "position_interval = excluded.position_interval, "
                "from_config = excluded.from_config, "
                "commit_timeout_ms = excluded.commit_timeout_ms, "
                "max_overhead = excluded.max_overhead, "
                "max_interval_ms = excluded.max_interval_ms",
                s);
    PrepareInto(db, delete_group, "DELETE FROM alignment_groups WHERE name = ?1", s);
    PrepareInto(db, raise_high_water,
                "UPDATE id_high_water SET value = ?1 WHERE id = 0 AND value < ?1", s);
    // A counter that is not an integer counts as nothing: the high-water mark replaces it.
    PrepareInto(db, counter_to_high_water,
                "INSERT INTO id_counters (job_id, pipeline_id, counter) VALUES (?1, ?2, "
                "(SELECT value FROM id_high_water WHERE id = 0)) "
                "ON CONFLICT (job_id, pipeline_id) DO UPDATE SET counter = MAX("
                "CASE WHEN typeof(counter) = 'integer' THEN counter ELSE 0 END, excluded.counter) "
                // A counter already as high is not written again: a commit's id was reserved
                // before, and rewriting the row made every commit dirty its page.
                "WHERE typeof(counter) != 'integer' OR counter < excluded.counter",
                s);
    PrepareInto(db, raise_group_counter,
                "UPDATE alignment_groups SET id_counter = MAX(id_counter, ?2) WHERE name = ?1", s);
    PrepareInto(db, update_group_progress,
                "UPDATE alignment_groups SET id_counter = MAX(id_counter, ?2), "
                "last_round_id = ?3, last_position = ?4, last_completed_at_ms = ?5 WHERE name = ?1",
                s);
    return s;
  }

  Status PutPipeline(const PipelineRecord& record) {
    const std::string key = record.spec.key.ToString();
    auto task_ids = TaskIdsToJson(record.spec.task_ids);
    if (!task_ids.ok()) {
      return Status::InvalidArgument("pipeline " + key + ": " + task_ids.status().message());
    }
    ResetGuard guard(upsert_pipeline);
    BindRecord(upsert_pipeline, record, *task_ids);
    if (int rc = upsert_pipeline.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "writing pipeline " + key);
    }
    return Status::Ok();
  }

  Status RaiseCounter(const PipelineKey& key, int64_t counter) {
    ResetGuard guard(raise_counter);
    raise_counter.Bind(1, key.job_id);
    raise_counter.Bind(2, key.pipeline_id);
    raise_counter.Bind(3, counter);
    if (int rc = raise_counter.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "raising the id counter of " + key.ToString());
    }
    // Not raised (it was as high already): the mark was raised with it when it was.
    if (sqlite3_changes(db.get()) == 0) return Status::Ok();
    return RaiseHighWater(counter);
  }

  // Every counter raised raises the store's high-water mark with it, in the same transaction.
  Status RaiseHighWater(int64_t counter) {
    ResetGuard guard(raise_high_water);
    raise_high_water.Bind(1, counter);
    if (int rc = raise_high_water.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "raising the ids' high-water mark");
    }
    return Status::Ok();
  }

  Status ReserveIds(const PipelineKey& key, int64_t new_counter) {
    if (new_counter < 0) {
      return Status::InvalidArgument("id counter of " + key.ToString() + " cannot be " +
                                     std::to_string(new_counter));
    }
    return RaiseCounter(key, new_counter);
  }

  // Writes the progress of an existing record; `changed` says whether there was one.
  Status PutProgress(const PipelineKey& key, const PipelineProgress& progress, bool* changed) {
    ResetGuard guard(update_progress);
    update_progress.Bind(1, key.job_id);
    update_progress.Bind(2, key.pipeline_id);
    BindProgress(update_progress, progress, 3);  // after the key, ?1 and ?2
    if (int rc = update_progress.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "writing the progress of pipeline " + key.ToString());
    }
    *changed = sqlite3_changes(db.get()) > 0;
    if (*changed && progress.last_committed_id > 0) {
      ResetGuard mark_guard(mark_committed);
      mark_committed.Bind(1, key.job_id);
      mark_committed.Bind(2, key.pipeline_id);
      mark_committed.Bind(3, progress.last_committed_id);
      mark_committed.Bind(4, progress.last_committed_at_ms);
      if (int rc = mark_committed.Step(); rc != SQLITE_DONE) {
        return db.Error(rc, "marking checkpoint " + std::to_string(progress.last_committed_id) +
                                " of pipeline " + key.ToString() + " COMMITTED");
      }
    }
    return Status::Ok();
  }

  Status CommitCheckpoint(const CheckpointCommit& commit) {
    const PipelineKey& key = commit.key;
    const CompletedCheckpoint& cp = commit.checkpoint;
    // Named only in an error: a commit builds no string it does not need.
    auto what = [&] {
      return "checkpoint " + std::to_string(cp.checkpoint_id) + " of " + key.ToString();
    };
    if (cp.checkpoint_id <= 0) return Status::InvalidArgument(what() + ": ids start at 1");
    auto states = TaskStatesToJson(cp);
    if (!states.ok()) return Status::InvalidArgument(what() + ": " + states.status().message());
    bool exists = false;
    if (Status s = PutProgress(key, commit.progress_after, &exists); !s.ok()) return s;
    // A history row without its pipeline would be an orphan no one lists or deletes.
    if (!exists) return Status::NotFound(what() + ": the pipeline has no record (deleted?)");
    {
      ResetGuard guard(insert_checkpoint);
      insert_checkpoint.Bind(1, key.job_id);
      insert_checkpoint.Bind(2, key.pipeline_id);
      insert_checkpoint.Bind(3, cp.checkpoint_id);
      insert_checkpoint.Bind(4, KindToInt(cp.kind));
      insert_checkpoint.Bind(5, cp.triggered_at_ms);
      insert_checkpoint.Bind(6, cp.finished_at_ms);
      insert_checkpoint.Bind(7, cp.location);
      insert_checkpoint.Bind(8, *states);
      insert_checkpoint.Bind(9, cp.position);
      insert_checkpoint.Bind(10, cp.alignment_group);
      insert_checkpoint.Bind(11, CommitStatusToInt(cp.commit_status));
      insert_checkpoint.Bind(12, cp.committed_at_ms);
      if (int rc = insert_checkpoint.Step(); rc != SQLITE_DONE) {
        if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
          // Overwriting would rewrite history a worker may already have been told about.
          return Status::AlreadyExists(what() + " is already stored; not overwriting it");
        }
        return db.Error(rc, "storing " + what());
      }
    }
    // Normally a no-op (the id came from a durably reserved block). If a caller ever committed an
    // id it had not reserved, this still keeps the id from being handed out again after a restart.
    if (Status s = RaiseCounter(key, cp.checkpoint_id); !s.ok()) return s;
    // No pinned id to spare: the statement without the json_each that would spare it.
    Stmt& trim = commit.keep.empty() ? trim_unpinned : trim_checkpoints;
    ResetGuard guard(trim);
    trim.Bind(1, key.job_id);
    trim.Bind(2, key.pipeline_id);
    // At least the checkpoint just stored survives, whatever `retained` says.
    trim.Bind(3, int64_t{std::max(commit.retained, 1) - 1});
    if (!commit.keep.empty()) trim.Bind(4, IdsToJson(commit.keep));
    if (int rc = trim.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "trimming the history of " + key.ToString());
    }
    return Status::Ok();
  }

  Status Probe(int64_t now_ms) {
    ResetGuard guard(probe);
    probe.Bind(1, std::to_string(now_ms));
    if (int rc = probe.Step(); rc != SQLITE_DONE) return db.Error(rc, "probe write");
    return Status::Ok();
  }

  Status DeletePipeline(const PipelineKey& key, bool unreadable) {
    for (Stmt* stmt : {&delete_checkpoints, &delete_pipeline}) {
      ResetGuard guard(*stmt);
      stmt->Bind(1, key.job_id);
      stmt->Bind(2, key.pipeline_id);
      if (int rc = stmt->Step(); rc != SQLITE_DONE) {
        return db.Error(rc, "deleting pipeline " + key.ToString());
      }
    }
    if (!unreadable) return Status::Ok();
    ResetGuard guard(counter_to_high_water);
    counter_to_high_water.Bind(1, key.job_id);
    counter_to_high_water.Bind(2, key.pipeline_id);
    if (int rc = counter_to_high_water.Step(); rc != SQLITE_DONE) {
      return db.Error(rc,
                      "raising the id counter of " + key.ToString() + " to the high-water mark");
    }
    return Status::Ok();
  }
  Status PipelineExists(const PipelineKey& key, bool* exists) {
    ResetGuard guard(pipeline_exists);
    pipeline_exists.Bind(1, key.job_id);
    pipeline_exists.Bind(2, key.pipeline_id);
    const int rc = pipeline_exists.Step();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      return db.Error(rc, "reading the record of " + key.ToString());
    }
    *exists = rc == SQLITE_ROW;
    return Status::Ok();
  }
  Status DeleteCheckpoints(const PipelineKey& key, const std::vector<int64_t>& ids) {
    bool exists = false;
    if (Status s = PipelineExists(key, &exists); !s.ok()) return s;
    if (!exists) return Status::NotFound("pipeline " + key.ToString() + " has no record");
    for (int64_t id : ids) {
      ResetGuard guard(delete_checkpoint);
      delete_checkpoint.Bind(1, key.job_id);
      delete_checkpoint.Bind(2, key.pipeline_id);
      delete_checkpoint.Bind(3, id);
      if (int rc = delete_checkpoint.Step(); rc != SQLITE_DONE) {
        return db.Error(rc, "deleting checkpoint " + std::to_string(id) + " of " + key.ToString());
      }
    }
    return Status::Ok();
  }
  Status PutGroup(const AlignmentGroupSpec& spec, bool from_config) {
    if (Status s = CheckGroupName(spec.name); !s.ok()) return s;
    ResetGuard guard(upsert_group);
    upsert_group.Bind(1, spec.name);
    upsert_group.Bind(2, spec.interval_ms);
    upsert_group.Bind(3, spec.timeout_ms);
    upsert_group.Bind(4, spec.min_pause_ms);
    upsert_group.Bind(5, spec.position_interval);
    upsert_group.Bind(6, int64_t{from_config ? 1 : 0});
    upsert_group.Bind(7, spec.commit_timeout_ms);
    upsert_group.Bind(8, spec.max_overhead);
    upsert_group.Bind(9, spec.max_interval_ms);
    if (int rc = upsert_group.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "writing alignment group " + spec.name);
    }
    return Status::Ok();
  }

  Status DeleteGroup(const std::string& name) {
    ResetGuard guard(delete_group);
    delete_group.Bind(1, name);
    if (int rc = delete_group.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "deleting alignment group " + name);
    }
    return Status::Ok();
  }

  Status ReserveGroupIds(const std::string& name, int64_t new_counter) {
    if (Status s = CheckGroupCounter(name, new_counter); !s.ok()) return s;
    ResetGuard guard(raise_group_counter);
    raise_group_counter.Bind(1, name);
    raise_group_counter.Bind(2, new_counter);
    if (int rc = raise_group_counter.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "raising the id counter of alignment group " + name);
    }
    if (sqlite3_changes(db.get()) == 0) {
      return Status::NotFound("alignment group " + name + " has no record");
    }
    return RaiseHighWater(new_counter);
  }

  // Runs inside the op's SAVEPOINT: a member that fails rolls back the members before it too.
  Status CommitGroupRound(const GroupRoundCommit& commit) {
    if (Status s = CheckGroupRound(commit); !s.ok()) return s;
    for (const CheckpointCommit& member : commit.members) {
      if (Status s = CommitCheckpoint(member); !s.ok()) {
        return Status(s.code(), "group round of " + commit.group + ": " + s.message());
      }
    }
    const GroupProgress& p = commit.progress_after;
    ResetGuard guard(update_group_progress);
    update_group_progress.Bind(1, commit.group);
    update_group_progress.Bind(2, p.id_counter);
    update_group_progress.Bind(3, p.last_round_id);
    update_group_progress.Bind(4, p.last_position);
    update_group_progress.Bind(5, p.last_completed_at_ms);
    if (int rc = update_group_progress.Step(); rc != SQLITE_DONE) {
      return db.Error(rc, "writing the progress of alignment group " + commit.group);
    }
    if (sqlite3_changes(db.get()) == 0) {
      return Status::NotFound("alignment group " + commit.group + " has no record (deleted?)");
    }
    return RaiseHighWater(p.id_counter);
  }

  // One op of the open transaction; its own status.
  Status Apply(const WriteOp& op) {
    return std::visit(
        [this](const auto& o) -> Status {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, PutPipelineOp>) {
            return PutPipeline(o.record);
          } else if constexpr (std::is_same_v<T, PutProgressOp>) {
            bool exists = false;  // none: deleted meanwhile, nothing to do
            return PutProgress(o.key, o.progress, &exists);
          } else if constexpr (std::is_same_v<T, ReserveIdsOp>) {
            return ReserveIds(o.key, o.new_counter);
          } else if constexpr (std::is_same_v<T, CommitCheckpointOp>) {
            return CommitCheckpoint(o.commit);
          } else if constexpr (std::is_same_v<T, ProbeOp>) {
            return Probe(o.now_ms);
          } else if constexpr (std::is_same_v<T, DeleteCheckpointsOp>) {
            return DeleteCheckpoints(o.key, o.checkpoint_ids);
          } else if constexpr (std::is_same_v<T, PutGroupOp>) {
            return PutGroup(o.spec, o.from_config);
          } else if constexpr (std::is_same_v<T, DeleteGroupOp>) {
            return DeleteGroup(o.name);
          } else if constexpr (std::is_same_v<T, ReserveGroupIdsOp>) {
            return ReserveGroupIds(o.name, o.new_counter);
          } else if constexpr (std::is_same_v<T, CommitGroupRoundOp>) {
            return CommitGroupRound(o.commit);
          } else {
            static_assert(std::is_same_v<T, DeletePipelineOp>);
            return DeletePipeline(o.key, o.unreadable);
          }
        },
        op);
  }
};

// The read-only connection: used under read_mu_ by whichever thread reads.
struct SqliteBackend::ReaderConn {
  Db db;
  Stmt count_pipelines, load_pipelines, load_history, list_completed, read_counter, load_groups;

  Status Prepare() {
    Status s;
    PrepareInto(db, count_pipelines, "SELECT COUNT(*) FROM pipelines", s);
    PrepareInto(db, load_pipelines,
                "SELECT " + JoinColumns("p.") +
                    ", COALESCE(c.counter, 0) FROM pipelines p LEFT JOIN id_counters c "
                    "ON c.job_id = p.job_id AND c.pipeline_id = p.pipeline_id "
                    "ORDER BY p.job_id, p.pipeline_id",
                s);
    // Every pipeline's history ids, and the task states of its newest (the restore point); the
    // others' states stay on disk.
    PrepareInto(db, load_history,
                "SELECT c.job_id, c.pipeline_id, c.checkpoint_id, c.kind, "
                "c.checkpoint_id = p.last_completed_id, c.triggered_at_ms, c.finished_at_ms, "
                "c.location, CASE WHEN c.checkpoint_id = p.last_completed_id "
                "THEN c.task_states ELSE '' END, c.position, c.alignment_group, "
                "c.commit_status, c.committed_at_ms "
                "FROM checkpoints c JOIN pipelines p "
                "ON p.job_id = c.job_id AND p.pipeline_id = c.pipeline_id "
                "ORDER BY c.job_id, c.pipeline_id, c.checkpoint_id",
                s);
    PrepareInto(db, list_completed,
                "SELECT checkpoint_id, kind, triggered_at_ms, finished_at_ms, location, "
                "task_states, position, alignment_group, commit_status, committed_at_ms "
                "FROM checkpoints "
                "WHERE job_id = ?1 AND pipeline_id = ?2 "
                "AND checkpoint_id < ?4 ORDER BY checkpoint_id DESC LIMIT ?3",
                s);
    PrepareInto(db, read_counter,
                "SELECT counter FROM id_counters WHERE job_id = ?1 AND pipeline_id = ?2", s);
    PrepareInto(db, load_groups,
                "SELECT name, interval_ms, timeout_ms, min_pause_ms, position_interval, "
                "from_config, id_counter, last_round_id, last_position, last_completed_at_ms, "
                "commit_timeout_ms, max_overhead, max_interval_ms FROM alignment_groups "
                "ORDER BY name",
                s);
    return s;
  }
};

Result<std::unique_ptr<SqliteBackend>> SqliteBackend::Create(Db writer_db, Db reader_db) {
  auto writer = std::make_unique<WriterConn>();
  writer->db = std::move(writer_db);
  if (Status s = writer->Prepare(); !s.ok()) {
    return Status(s.code(), writer->db.path() + ": " + s.message());
  }
  auto reader = std::make_unique<ReaderConn>();
  reader->db = std::move(reader_db);
  if (Status s = reader->Prepare(); !s.ok()) {
    return Status(s.code(), reader->db.path() + ": " + s.message());
  }
  return std::unique_ptr<SqliteBackend>(new SqliteBackend(std::move(writer), std::move(reader)));
}

SqliteBackend::SqliteBackend(std::unique_ptr<WriterConn> writer, std::unique_ptr<ReaderConn> reader)
    : path_(writer->db.path()), writer_(std::move(writer)), reader_(std::move(reader)) {}

SqliteBackend::~SqliteBackend() = default;

BatchResult SqliteBackend::ApplyBatch(const std::vector<WriteOp>& ops) {
  WriterConn& w = *writer_;
  const std::string count = std::to_string(ops.size());
  if (int rc = w.begin.Run(); rc != SQLITE_DONE) {
    Status s = w.db.Error(rc, "BEGIN on " + path_);
    if (s.code() == StatusCode::kDataLoss) return BatchResult::Stop(s);
    spdlog::error("store: {} writes failed, nothing written: {}", count, s.ToString());
    return BatchResult::NotWritten(Status(s.code(), "nothing written: " + s.message()));
  }

  std::vector<Status> results(ops.size());
  Status lost;  // set when the transaction as a whole is lost
  for (size_t i = 0; i < ops.size(); ++i) {
    if (int rc = w.savepoint.Run(); rc != SQLITE_DONE) {
      lost = w.db.Error(rc, "SAVEPOINT");
      break;
    }
    Status s;
    try {
      s = w.Apply(ops[i]);
    } catch (const std::exception& e) {
      s = Status::Internal(std::string("unexpected exception in a store write: ") + e.what());
    }
    if (s.ok()) {
      if (int rc = w.release.Run(); rc != SQLITE_DONE) {
        lost = w.db.Error(rc, "RELEASE");
        break;
      }
      continue;
    }
    if (s.code() == StatusCode::kDataLoss) {
      // A damaged file: commit nothing more to it, report nothing, stop (exit 65).
      if (w.db.InTransaction()) (void)w.rollback.Run();
      return BatchResult::Stop(s);
    }
    if (!w.db.InTransaction()) {
      // SQLite rolled the whole transaction back by itself (I/O error, disk full, out of memory):
      // the ops applied before this one are gone as well.
      lost = s;
      break;
    }
    int rc = w.rollback_to.Run();
    if (rc == SQLITE_DONE) rc = w.release.Run();
    if (rc != SQLITE_DONE) {
      lost = w.db.Error(rc, "ROLLBACK TO");
      break;
    }
    spdlog::error("store: write rolled back, the others of its batch proceed: {}", s.ToString());
    results[i] = std::move(s);
  }
  if (lost.code() == StatusCode::kDataLoss) {
    if (w.db.InTransaction()) (void)w.rollback.Run();
    return BatchResult::Stop(lost);
  }
  if (!lost.ok()) {
    // Nothing is committed: this batch never reaches COMMIT. If even ROLLBACK fails the connection
    // stays inside the transaction and every later BEGIN fails, which is still a truthful failure.
    if (w.db.InTransaction()) (void)w.rollback.Run();
    Status s(lost.code(),
             "transaction of " + count + " writes rolled back, nothing written: " + lost.message());
    spdlog::error("store: {}", s.ToString());
    return BatchResult::NotWritten(s);
  }

  if (int rc = w.commit.Run(); rc != SQLITE_DONE) {
    Status s = w.db.Error(rc, "COMMIT of " + count + " writes to " + path_);
    const int primary = sqlite::PrimaryCode(rc);
    if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && w.db.InTransaction()) {
      // The transaction is still open and nothing reached the log: a clean failure.
      (void)w.rollback.Run();
      spdlog::error("store: {} writes failed, nothing written: {}", count, s.ToString());
      return BatchResult::NotWritten(s);
    }
    if (primary == SQLITE_FULL) {
      // The disk refused a write of the log. SQLite appends a transaction's frames in order and
      // marks the last one as the commit; a refused (or short) write stops it before that mark is
      // complete, and a frame cut short fails its checksum at recovery. So nothing of this batch
      // can ever reappear: a clean failure, and the store goes on once space returns. (A failed
      // fsync is different: the frames may be on disk, and that stays fail-stop below.)
      if (w.db.InTransaction()) (void)w.rollback.Run();
      Status full(s.code(), "disk full, nothing written: " + s.message());
      spdlog::error("store: {} writes failed: {}", count, full.ToString());
      return BatchResult::NotWritten(full);
    }
    if (s.code() == StatusCode::kDataLoss) {
      if (w.db.InTransaction()) (void)w.rollback.Run();
      return BatchResult::Stop(s);
    }
    // Frames may or may not be in the WAL: after a crash this batch could reappear. Reporting it
    // failed could make workers discard state that is in fact the latest durable checkpoint;
    // reporting it done could promise what is lost. So neither is reported (docs/DESIGN.md).
    if (w.db.InTransaction()) (void)w.rollback.Run();
    spdlog::critical("store: {}; whether these {} writes are durable is unknown, reporting neither",
                     s.ToString(), count);
    return BatchResult::Stop(
        Status::Unavailable("store stopped after a commit with unknown outcome: " + s.message()));
  }
  return BatchResult::Committed(std::move(results));
}

Result<std::vector<StoredPipeline>> SqliteBackend::LoadPipelines() {
  MutexLock lock(read_mu_);
  std::vector<StoredPipeline> pipelines;
  {
    // Room for every row at once: a StoredPipeline is large, and growing the vector row by row
    // moved 100,000 of them about (0.5 s of a restart's 2.2, mostly faults on fresh pages).
    ResetGuard counted(reader_->count_pipelines);
    if (reader_->count_pipelines.Step() == SQLITE_ROW) {
      pipelines.reserve(
          static_cast<size_t>(std::max<int64_t>(0, reader_->count_pipelines.ColumnInt(0))));
    }
  }
  Stmt& stmt = reader_->load_pipelines;
  ResetGuard guard(stmt);
  std::vector<UnreadableRecord> unreadable;
  // A row that does not read or validate quarantines its pipeline alone (ha/etcd_outcomes.h's
  // rule, on this backend too): the others load and run.
  auto quarantine = [&](const PipelineKey& key, std::string group, std::string reason) {
    UnreadableRecord record;
    record.kind = UnreadableRecord::Kind::kPipeline;
    record.pipeline = key;
    record.group = std::move(group);
    record.reason =
        "row of " + Printable(key.ToString()) + " in " + path_ + ": " + std::move(reason);
    unreadable.push_back(std::move(record));
  };
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    const PipelineKey key{stmt.ColumnText(0), stmt.ColumnText(1)};
    // The group it names, when that much reads: its group waits for it.
    const std::string group =
        ValidateId(stmt.ColumnText(9), "alignment_group").ok() ? stmt.ColumnText(9) : "";
    auto record = ReadRecord(stmt, path_);
    if (!record.ok()) {
      quarantine(key, group, record.status().message());
      continue;
    }
    if (!stmt.ColumnIsInt(kRecordColumnCount)) {
      quarantine(key, group, "its id counter (id_counters) is not an integer");
      continue;
    }
    StoredPipeline stored;
    stored.record = std::move(*record);
    stored.id_counter = stmt.ColumnInt(kRecordColumnCount);
    // Held to the rules of API input: a counter near INT64_MAX, a pipeline without tasks, an id
    // that names a path (API input never has "/") is damaged data, refused here rather than
    // overflowing, hanging or escaping its savepoint directory later.
    Status valid = ValidateStored(stored);
    if (valid.ok()) valid = ValidatePathId(key.job_id, "job_id");
    if (valid.ok()) valid = ValidatePathId(key.pipeline_id, "pipeline_id");
    if (!valid.ok()) {
      quarantine(key, group, "not valid: " + valid.message());
      continue;
    }
    pipelines.push_back(std::move(stored));
  }
  // A damaged file (as opposed to a damaged row) is DATA_LOSS, which stops the start with exit
  // 65: the engine itself reports it.
  if (rc != SQLITE_DONE) return reader_->db.Error(rc, "loading pipelines from " + path_);
  if (Status s = LoadHistories(&pipelines, &unreadable); !s.ok()) return s;
  for (const UnreadableRecord& record : unreadable) {
    spdlog::error("store: {} is quarantined (UNREADABLE; every other pipeline runs): {}",
                  Printable(record.pipeline.ToString()), record.reason);
  }
  unreadable_pipelines_ = std::move(unreadable);
  return pipelines;
}

Status SqliteBackend::LoadHistories(std::vector<StoredPipeline>* pipelines,
                                    std::vector<UnreadableRecord>* unreadable) {
  std::map<PipelineKey, StoredPipeline*> by_key;
  for (StoredPipeline& stored : *pipelines) by_key[stored.record.spec.key] = &stored;
  std::map<PipelineKey, std::string> damaged;  // pipeline -> the first reason
  Stmt& stmt = reader_->load_history;
  ResetGuard guard(stmt);
  int rc;
  StoredPipeline* current = nullptr;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    PipelineKey key{stmt.ColumnText(0), stmt.ColumnText(1)};
    if (!current || current->record.spec.key != key) {
      auto found = by_key.find(key);
      current = found == by_key.end() ? nullptr : found->second;  // quarantined already
    }
    if (!current || damaged.count(key)) continue;
    const int64_t id = stmt.ColumnInt(2);
    const std::string where = "checkpoint " + std::to_string(id);
    auto kind = KindFromInt(stmt.ColumnInt(3));
    if (!stmt.ColumnIsInt(2) || !stmt.ColumnIsInt(3) || !kind) {
      damaged[key] = where + ": its id or kind is not one this ckptd wrote";
      continue;
    }
    if (Status s = ValidateHistoryId(id); !s.ok()) {
      damaged[key] = where + " is not valid: " + s.message();
      continue;
    }
    if (id > current->id_counter) {
      // An id above the counter would be handed out again.
      damaged[key] = where + " is above its id counter " + std::to_string(current->id_counter);
      continue;
    }
    current->history.push_back({id, *kind});
    if (stmt.ColumnInt(4) == 0) continue;
    CompletedCheckpoint& newest = current->newest.emplace();
    newest.checkpoint_id = id;
    newest.kind = *kind;
    newest.triggered_at_ms = stmt.ColumnInt(5);
    newest.finished_at_ms = stmt.ColumnInt(6);
    newest.location = stmt.ColumnText(7);
    newest.position = stmt.ColumnInt(9);
    newest.alignment_group = stmt.ColumnText(10);
    auto commit = CommitStatusFromInt(stmt.ColumnInt(11));
    if (!commit) {
      damaged[key] = where + ": its commit status is not one this ckptd wrote";
      continue;
    }
    newest.commit_status = *commit;
    newest.committed_at_ms = stmt.ColumnInt(12);
    if (!TaskStatesFromJson(stmt.ColumnText(8), &newest.task_states, &newest.task_figures)) {
      damaged[key] = where + ": its task states do not parse";
    }
  }
  if (rc != SQLITE_DONE) return reader_->db.Error(rc, "loading checkpoint histories from " + path_);
  if (damaged.empty()) return Status::Ok();
  std::vector<StoredPipeline> kept;
  kept.reserve(pipelines->size());
  for (StoredPipeline& stored : *pipelines) {
    auto it = damaged.find(stored.record.spec.key);
    if (it == damaged.end()) {
      kept.push_back(std::move(stored));
      continue;
    }
    UnreadableRecord record;
    record.pipeline = stored.record.spec.key;
    record.group = stored.record.spec.alignment_group;
    record.reason =
        "history of " + Printable(it->first.ToString()) + " in " + path_ + ": " + it->second;
    unreadable->push_back(std::move(record));
  }
  *pipelines = std::move(kept);
  return Status::Ok();
}

std::vector<UnreadableRecord> SqliteBackend::UnreadableRecords() {
  MutexLock lock(read_mu_);
  std::vector<UnreadableRecord> all = unreadable_pipelines_;
  all.insert(all.end(), unreadable_groups_.begin(), unreadable_groups_.end());
  return all;
}

Result<std::vector<CompletedCheckpoint>> SqliteBackend::ListCompleted(const PipelineKey& key,
                                                                      int limit,
                                                                      int64_t before_id) {
  MutexLock lock(read_mu_);
  Stmt& stmt = reader_->list_completed;
  ResetGuard guard(stmt);
  stmt.Bind(1, key.job_id);
  stmt.Bind(2, key.pipeline_id);
  stmt.Bind(3, int64_t{limit > 0 ? limit : -1});  // a negative LIMIT means none in SQLite
  stmt.Bind(4, before_id > 0 ? before_id : std::numeric_limits<int64_t>::max());
  std::vector<CompletedCheckpoint> checkpoints;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    CompletedCheckpoint cp;
    cp.checkpoint_id = stmt.ColumnInt(0);
    const std::string where =
        "checkpoint " + std::to_string(cp.checkpoint_id) + " of " + key.ToString() + " in " + path_;
    auto kind = KindFromInt(stmt.ColumnInt(1));
    if (!kind) return Status::Internal("unknown kind of " + where);
    cp.kind = *kind;
    cp.triggered_at_ms = stmt.ColumnInt(2);
    cp.finished_at_ms = stmt.ColumnInt(3);
    cp.location = stmt.ColumnText(4);
    cp.position = stmt.ColumnInt(6);
    cp.alignment_group = stmt.ColumnText(7);
    auto commit = CommitStatusFromInt(stmt.ColumnInt(8));
    if (!commit) return Status::Internal("unknown commit status of " + where);
    cp.commit_status = *commit;
    cp.committed_at_ms = stmt.ColumnInt(9);
    if (!TaskStatesFromJson(stmt.ColumnText(5), &cp.task_states, &cp.task_figures)) {
      return Status::Internal("unreadable task states of " + where);
    }
    checkpoints.push_back(std::move(cp));
  }
  if (rc != SQLITE_DONE) {
    return reader_->db.Error(rc, "listing checkpoints of " + key.ToString() + " in " + path_);
  }
  return checkpoints;
}

Result<int64_t> SqliteBackend::LoadIdCounter(const PipelineKey& key) {
  MutexLock lock(read_mu_);
  Stmt& stmt = reader_->read_counter;
  ResetGuard guard(stmt);
  stmt.Bind(1, key.job_id);
  stmt.Bind(2, key.pipeline_id);
  int rc = stmt.Step();
  if (rc == SQLITE_ROW && stmt.ColumnIsInt(0)) return stmt.ColumnInt(0);
  if (rc == SQLITE_DONE) return int64_t{0};
  if (rc == SQLITE_ROW) {
    // A counter that does not read: nothing below the store's high-water mark is safe to hand
    // out, so the pipeline goes on above it.
    stmt.Reset();
    auto high_water = reader_->db.QueryInt("SELECT value FROM id_high_water WHERE id = 0");
    if (!high_water.ok()) return high_water.status();
    spdlog::warn(
        "store: the id counter of {} in {} is not an integer; ids go on above the "
        "store's high-water mark {}",
        Printable(key.ToString()), path_, *high_water);
    return *high_water;
  }
  return reader_->db.Error(rc, "reading the id counter of " + key.ToString() + " in " + path_);
}

Result<std::vector<StoredGroup>> SqliteBackend::LoadGroups() {
  MutexLock lock(read_mu_);
  Stmt& stmt = reader_->load_groups;
  ResetGuard guard(stmt);
  std::vector<StoredGroup> groups;
  std::vector<UnreadableRecord> unreadable;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    bool numbers = true;
    for (int col = 1; col <= 10; ++col) numbers = numbers && stmt.ColumnIsInt(col);
    numbers = numbers && stmt.ColumnIsNumber(11) && stmt.ColumnIsInt(12);
    if (!numbers) {
      UnreadableRecord record;
      record.kind = UnreadableRecord::Kind::kGroup;
      record.group = stmt.ColumnText(0);
      record.reason = "row of alignment group " + Printable(record.group) + " in " + path_ +
                      ": a column that holds a number holds something else";
      spdlog::error("store: alignment group {} is quarantined (UNREADABLE): {}",
                    Printable(record.group), record.reason);
      unreadable.push_back(std::move(record));
      continue;
    }
    StoredGroup& g = groups.emplace_back();
    g.spec.name = stmt.ColumnText(0);
    g.spec.interval_ms = stmt.ColumnInt(1);
    g.spec.timeout_ms = stmt.ColumnInt(2);
    g.spec.min_pause_ms = stmt.ColumnInt(3);
    g.spec.position_interval = stmt.ColumnInt(4);
    g.from_config = stmt.ColumnInt(5) != 0;
    g.progress.id_counter = stmt.ColumnInt(6);
    g.progress.last_round_id = stmt.ColumnInt(7);
    g.progress.last_position = stmt.ColumnInt(8);
    g.progress.last_completed_at_ms = stmt.ColumnInt(9);
    g.spec.commit_timeout_ms = stmt.ColumnInt(10);
    g.spec.max_overhead = stmt.ColumnDouble(11);
    g.spec.max_interval_ms = stmt.ColumnInt(12);
  }
  if (rc != SQLITE_DONE) return reader_->db.Error(rc, "loading alignment groups from " + path_);
  unreadable_groups_ = std::move(unreadable);
  return groups;
}

}  // namespace ckpt
