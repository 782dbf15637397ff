#pragma once
// HeapTrimmer gives memory back to the system after many long calls went away. glibc keeps what
// was freed in its per-thread arenas, so 20,000 worker streams that came and went (a fleet
// reconnecting, streams that never said hello) or 10,000 cancelled savepoint calls would leave
// the daemon at its peak size for good: about 20 KB a call in gRPC and here, 400 MB in all. Every
// interval it looks how many such calls ended since the last trim and, after many, calls
// malloc_trim.
//
// Threading: the timer and its handler live on a strand of `io` (the control loop: a trim takes
// milliseconds and must not stall a pipeline). `ended_streams` is read there.
// Lifetime: destroy it before `io`; the handler holds only shared state.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace ckpt {

class HeapTrimmer {
 public:
  // `ended_streams`: how many calls (worker streams, savepoint calls) ended so far, a counter.
  // Trims once at least `min_ended` more ended since the last trim.
  HeapTrimmer(boost::asio::io_context& io, std::function<uint64_t()> ended_streams,
              std::chrono::milliseconds interval = std::chrono::seconds(5),
              uint64_t min_ended = 1000);
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  uint64_t trims() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ckpt
