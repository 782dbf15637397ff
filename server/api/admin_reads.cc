#include "api/admin_reads.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/admin_convert.h"

namespace ckpt {

namespace {

// The coordinator's marks, for ApplyProgressMarks: the COMMITTED mark (the etcd store writes a
// checkpoint COMMITTING and marks it COMMITTED in the pipeline's progress only) and the
// unrestorable ones (kept in the progress by both stores).
PipelineProgress ProgressMarks(const PipelineCoordinator& c) {
  PipelineProgress marks;
  marks.last_committed_id = c.LastCommittedId();
  marks.last_committed_at_ms = c.LastCommittedAtMs();
  marks.unrestorable_ids = c.UnrestorableIds();
  return marks;
}

}  // namespace

size_t RepeatedFieldBytes(size_t bytes) {
  size_t varint = 1;
  for (size_t rest = bytes >> 7; rest != 0; rest >>= 7) ++varint;
  return 1 + varint + bytes;
}

void ReadCheckpointHistory(AdminBackend& backend, const std::shared_ptr<PipelineRunner>& runner,
                           int limit, int64_t before_id, v1::ListCheckpointsResponse* out,
                           std::vector<int64_t>* state_bytes, std::function<void(Status)> done) {
  runner->Inspect([&backend, key = runner->key(), limit, before_id, out, state_bytes,
                   done = std::move(done)](const PipelineCoordinator& c) mutable {
    const int expected = static_cast<int>(c.spec().task_ids.size());
    const PipelineProgress marks = ProgressMarks(c);
    std::optional<PendingSummary> pending = before_id == 0 ? c.Pending() : std::nullopt;
    std::vector<RoundSummary> recent;
    for (const auto& r : c.RecentRounds()) {
      if (before_id == 0 || r.checkpoint_id < before_id) recent.push_back(r);
    }
    backend.ListCompleted(
        key, limit, before_id,
        [limit, out, state_bytes, expected, pending, marks, recent = std::move(recent),
         done = std::move(done)](Result<std::vector<CompletedCheckpoint>> completed) {
          if (!completed.ok()) return done(completed.status());
          for (CompletedCheckpoint& checkpoint : *completed) ApplyProgressMarks(marks, checkpoint);
          if (pending) {
            ToProto(*pending, out->add_checkpoints());
            if (state_bytes) state_bytes->push_back(0);
          }
          // The reply's size so far, kept as entries are added (asking the message each time
          // would walk every entry again: quadratic in a page of big entries).
          size_t reply_bytes = out->ByteSizeLong();
          // Finished rounds newest first: ids grow with time, so merge by id.
          auto c = completed->begin();
          auto r = recent.begin();
          int added = 0;
          int64_t last_id = 0;
          bool cut_short = false;
          while (c != completed->end() || r != recent.end()) {
            if (added == limit) {
              cut_short = true;
              break;
            }
            v1::CheckpointInfo info;
            int64_t bytes = 0;
            if (r == recent.end() ||
                (c != completed->end() && c->checkpoint_id > r->checkpoint_id)) {
              if (state_bytes) {
                for (const auto& [task, state] : c->task_states) bytes += state.size_bytes;
              }
              ToProto(*c++, expected, &info, /*with_states=*/state_bytes == nullptr);
            } else {
              ToProto(*r++, &info);
            }
            // Per-task state makes entries big (thousands of tasks): stop before the reply
            // outgrows what a default gRPC client accepts; the next page has the rest. The
            // newest always comes, however big (clients accept up to 64 MiB).
            const size_t entry_bytes = RepeatedFieldBytes(info.ByteSizeLong());
            if (added > 0 && reply_bytes + entry_bytes > kMaxListReplyBytes) {
              cut_short = true;
              break;
            }
            last_id = info.checkpoint_id();
            *out->add_checkpoints() = std::move(info);
            if (state_bytes) state_bytes->push_back(bytes);
            reply_bytes += entry_bytes;
            ++added;
          }
          // The store gave `limit` rows: there may be older ones.
          if (added > 0 && (cut_short || static_cast<int>(completed->size()) == limit)) {
            out->set_next_page_token(std::to_string(last_id));
          }
          done(Status::Ok());
        });
  });
}

void ReadCheckpoint(AdminBackend& backend, const std::shared_ptr<PipelineRunner>& runner,
                    int64_t checkpoint_id, v1::CheckpointInfo* out,
                    std::function<void(Status)> done) {
  const int64_t id = checkpoint_id;
  // The pending round and the newest failed one are in memory (read on the strand); completed
  // ones in the store, read off the strand by the backend.
  runner->Inspect([&backend, key = runner->key(), id, out,
                   done = std::move(done)](const PipelineCoordinator& c) {
    if (auto detail = c.DescribeCheckpoint(id)) {
      ToProto(*detail, out);
      return done(Status::Ok());
    }
    const std::string missing = "checkpoint " + std::to_string(id) + " of pipeline " +
                                key.ToString() +
                                " is neither pending, nor a recent failure, nor in its history "
                                "(ckptctl checkpoint list shows what is)";
    if (id == std::numeric_limits<int64_t>::max()) return done(Status::NotFound(missing));
    const int expected = static_cast<int>(c.spec().task_ids.size());
    backend.ListCompleted(
        key, 1, id + 1,
        [id, expected, missing, out, marks = ProgressMarks(c), commit_times = c.TaskCommitTimes(id),
         done = std::move(done)](Result<std::vector<CompletedCheckpoint>> found) {
          if (!found.ok()) return done(found.status());
          if (found->empty() || found->front().checkpoint_id != id) {
            return done(Status::NotFound(missing));
          }
          ApplyProgressMarks(marks, found->front());
          ToProto(found->front(), expected, out);
          out->clear_state();  // the states are in `tasks`: a wide checkpoint's, once
          AddTasks(found->front(), out);
          AddTaskCommitTimes(commit_times, out);
          done(Status::Ok());
        });
  });
}

}  // namespace ckpt
