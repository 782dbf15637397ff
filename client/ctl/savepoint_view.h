#pragma once
// What `ckptctl savepoint` shows while it waits: a live block redrawn on a terminal, or one plain
// line per change otherwise (for logs and CI).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ckpt/v1/admin.pb.h"

namespace ckpt::ctl {

// The live block: a headline with the overall status and `elapsed_ms`, then a row per pipeline
// (PIPELINE STATUS ACKED SAVEPOINT), aligned. No line ends with '\n'.
std::vector<std::string> LiveProgressLines(const std::string& job_id,
                                           const v1::SavepointProgress& progress,
                                           int64_t elapsed_ms);

// Plain progress: remembers what it reported per pipeline and reports only what changed.
// Threading: a plain value; requires external synchronization.
class ProgressChangeLog {
 public:
  // One line (without '\n') per pipeline whose status, acked/expected count or savepoint id
  // differs from the previous call, e.g.
  // "savepoint etl/p0: IN_PROGRESS, savepoint 7, 2/3 tasks acked (1.2s)".
  std::vector<std::string> Changes(const v1::SavepointProgress& progress, int64_t elapsed_ms);

 private:
  std::map<std::string, std::string> last_;  // pipeline id -> what was last reported
};

}  // namespace ckpt::ctl
