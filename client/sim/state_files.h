#pragma once
// --state-dir: a small real file per task per checkpoint, so that an end-to-end test can see the
// restore loop work: the file's path is acked as the state's uri, a release deletes it, and a
// restore checks that every file it is handed still exists.
//
//   <dir>/<job>/<pipeline>/chk-<id>/<task>
//
// Ids are written with every byte outside [A-Za-z0-9_-] as %XX, so no id can name a path
// elsewhere ("..", "/"). The writes are small and synchronous: a testing aid, not for benchmarks.
//
// Threading: stateless; safe from any thread.

#include <cstdint>
#include <string>

namespace ckpt::sim {

class StateFiles {
 public:
  explicit StateFiles(std::string dir) : dir_(std::move(dir)) {}

  // Writes the task's file for this checkpoint; its path, or "" and *error when it failed.
  std::string Write(const std::string& job, const std::string& pipeline, int64_t checkpoint_id,
                    const std::string& task, std::string* error) const;
  // Deletes the task's file of this checkpoint (and the checkpoint's directory once empty); a file
  // already gone is not an error (a release may come twice).
  void Remove(const std::string& job, const std::string& pipeline, int64_t checkpoint_id,
              const std::string& task) const;
  // Whether `uri` (as Write returned it) is a regular file.
  static bool Exists(const std::string& uri);

 private:
  std::string CheckpointDir(const std::string& job, const std::string& pipeline,
                            int64_t checkpoint_id) const;

  const std::string dir_;
};

}  // namespace ckpt::sim
