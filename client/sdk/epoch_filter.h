#pragma once
// Which messages of an HA group's leaders a pipeline's session believes (docs/PROTOCOL.md, "High
// availability"). Every leadership has an epoch that grows with each new leader; a message of an
// epoch lower than one already seen comes from a deposed leader, which may still be sending for
// a moment, and is dropped. Epoch 0 is a daemon with the embedded store: never dropped.
//
// A trigger carries its own epoch. An abort or a complete carries none: it is judged by the epoch
// of the welcome of the stream it came on.
//
// Threading: a plain value; requires external synchronization (the session's strand).

#include <cstdint>

namespace ckpt::sdk::internal {

class EpochFilter {
 public:
  // A new stream: no welcome on it yet.
  void OnNewStream() { stream_epoch_ = 0; }
  // The welcome of the current stream. True when it is to be believed.
  bool AcceptWelcome(int64_t leader_epoch);
  // True when a trigger of this epoch is to be believed.
  bool AcceptTrigger(int64_t leader_epoch);
  // True when an abort or complete of the current stream is to be believed.
  bool AcceptOfStream() const { return Current(stream_epoch_); }

  int64_t highest_seen() const { return highest_seen_; }

 private:
  bool Current(int64_t epoch) const { return epoch == 0 || epoch >= highest_seen_; }
  // Notes a believed epoch.
  void See(int64_t epoch);

  int64_t highest_seen_ = 0;
  int64_t stream_epoch_ = 0;  // of the current stream's welcome; 0 before it
};

}  // namespace ckpt::sdk::internal
