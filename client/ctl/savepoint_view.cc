#include "ctl/savepoint_view.h"

#include "ctl/durations.h"
#include "ctl/output_table.h"
#include "views/enum_names.h"

namespace ckpt::ctl {
namespace {

// "-" until the daemon knows how many tasks the round waits for.
std::string Acked(const v1::PipelineSavepoint& s) {
  if (s.expected_tasks() <= 0) return "-";
  return std::to_string(s.acked_tasks()) + "/" + std::to_string(s.expected_tasks());
}

// The part of a pipeline's progress worth a line when it changes (not the elapsed time).
std::string State(const v1::PipelineSavepoint& s) {
  std::string text = ShortName(s.status());
  if (s.savepoint_id() > 0) text += ", savepoint " + std::to_string(s.savepoint_id());
  if (s.expected_tasks() > 0) text += ", " + Acked(s) + " tasks acked";
  if (!s.failure_reason().empty()) text += ": " + s.failure_reason();
  return text;
}

}  // namespace

std::vector<std::string> LiveProgressLines(const std::string& job_id,
                                           const v1::SavepointProgress& progress,
                                           int64_t elapsed_ms) {
  std::vector<std::string> lines;
  const std::string status = progress.status() == v1::SAVEPOINT_STATUS_UNSPECIFIED
                                 ? std::string("STARTING")
                                 : ShortName(progress.status());
  lines.push_back("Savepoint of job " + job_id + ": " + status + ", " + FormatElapsed(elapsed_ms));
  if (progress.savepoints().empty()) return lines;
  Table table({"PIPELINE", "STATUS", "ACKED", "SAVEPOINT"});
  for (const v1::PipelineSavepoint& s : progress.savepoints()) {
    table.AddRow({s.pipeline_id(), ShortName(s.status()), Acked(s),
                  s.savepoint_id() > 0 ? std::to_string(s.savepoint_id()) : "-"});
  }
  const std::string rendered = table.Render();
  size_t start = 0;
  while (start < rendered.size()) {
    const size_t end = rendered.find('\n', start);
    lines.push_back("  " + rendered.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> ProgressChangeLog::Changes(const v1::SavepointProgress& progress,
                                                    int64_t elapsed_ms) {
  std::vector<std::string> lines;
  for (const v1::PipelineSavepoint& s : progress.savepoints()) {
    std::string state = State(s);
    std::string& last = last_[s.pipeline_id()];
    if (state == last) continue;
    lines.push_back("savepoint " + progress.job_id() + "/" + s.pipeline_id() + ": " + state + " (" +
                    FormatElapsed(elapsed_ms) + ")");
    last = std::move(state);
  }
  return lines;
}

}  // namespace ckpt::ctl
