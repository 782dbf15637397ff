#include "runtime/heap_trimmer.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

namespace ckpt {

namespace asio = boost::asio;

struct HeapTrimmer::State {
  State(asio::io_context& io, std::function<uint64_t()> ended_streams,
        std::chrono::milliseconds interval, uint64_t min_ended)
      : ended_streams(std::move(ended_streams)),
        interval(interval),
        min_ended(min_ended),
        strand(asio::make_strand(io)),
        timer(strand) {}

  static void Tick(const std::shared_ptr<State>& state) {
    if (state->stopped.load()) return;
    const uint64_t ended = state->ended_streams();
    if (ended - state->ended_at_last_trim >= state->min_ended) {
      const auto started = std::chrono::steady_clock::now();
      malloc_trim(0);
      state->trims.fetch_add(1);
      spdlog::debug(
          "memory: {} worker streams ended since the last trim; returned free heap to "
          "the system in {} ms",
          ended - state->ended_at_last_trim,
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                started)
              .count());
      state->ended_at_last_trim = ended;
    }
    state->timer.expires_after(state->interval);
    state->timer.async_wait([state](const boost::system::error_code& ec) {
      if (!ec) Tick(state);
    });
  }

  const std::function<uint64_t()> ended_streams;
  const std::chrono::milliseconds interval;
  const uint64_t min_ended;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;         // strand only
  uint64_t ended_at_last_trim = 0;  // strand only
  std::atomic<uint64_t> trims{0};
  std::atomic<bool> stopped{false};
};

HeapTrimmer::HeapTrimmer(asio::io_context& io, std::function<uint64_t()> ended_streams,
                         std::chrono::milliseconds interval, uint64_t min_ended)
    : state_(std::make_shared<State>(io, std::move(ended_streams), interval, min_ended)) {
  asio::post(state_->strand, [state = state_] { State::Tick(state); });
}

HeapTrimmer::~HeapTrimmer() {
  state_->stopped.store(true);
  asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
}

uint64_t HeapTrimmer::trims() const { return state_->trims.load(); }

}  // namespace ckpt
