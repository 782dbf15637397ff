#pragma once
// The bearer token of a WorkerRuntime, re-read from its file whenever the file changed, so that a
// rotated token is sent from the next connect attempt on without restarting the worker. A stat per
// connect attempt finds out; the file is read only when it changed.

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace ckpt::sdk::internal {

// Threading: safe for concurrent use without external synchronization.
class TokenSource {
 public:
  // `option` names the file in messages ("token_file"). `path` empty: no token, ever. `token` is
  // what the file held when the runtime was built (already checked): sent if the file no longer
  // holds a valid token at the first attempt.
  TokenSource(std::string option, std::string path, std::string token);
  TokenSource(const TokenSource&) = delete;
  TokenSource& operator=(const TokenSource&) = delete;

  // The token to send on a new stream ("" for none). When the file changed and no longer holds a
  // valid token (missing, empty, half written by a rotation that did not rename a new file in
  // place), the last good token is kept and stderr says why, once per distinct problem.
  std::string Current();

 private:
  // What tells a changed file: a rename puts another inode in place, an edit moves the times.
  struct FileVersion {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    int64_t modified_ns = 0;
    int64_t changed_ns = 0;
    bool operator==(const FileVersion&) const = default;
  };
  // False when the file cannot be inspected now.
  bool Inspect(FileVersion* version) const;
  // The version is older than kSettledNs.
  static bool Settled(const FileVersion& version);
  // File times move in steps of a clock tick: a file rewritten in place within the tick it was
  // read in, at the same size, looks unchanged. So a version that was this young when read is
  // checked by reading the file again.
  static constexpr int64_t kSettledNs = 1'000'000'000;

  // Constant after construction.
  const std::string option_;
  const std::string path_;

  std::mutex mu_;
  std::string token_;             // guarded by mu_
  FileVersion version_;           // guarded by mu_: the file as token_ was read from it
  bool version_settled_ = false;  // guarded by mu_: version_ was older than kSettledNs when read
  std::string last_problem_;      // guarded by mu_: the last problem reported, "" once read again
};

}  // namespace ckpt::sdk::internal
