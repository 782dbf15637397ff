#include "runtime/loop_monitor.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

namespace ckpt {

namespace asio = boost::asio;
using Steady = std::chrono::steady_clock;

struct LoopMonitor::State {
  State(std::vector<asio::io_context*> loops, std::chrono::milliseconds interval)
      : loops(std::move(loops)),
        interval(interval),
        last_turn(this->loops.size()),
        strand(asio::make_strand(*this->loops.at(0))),
        timer(strand) {
    const auto now = Steady::now().time_since_epoch().count();
    for (auto& t : last_turn) t.store(now);  // start-up is the first proof
  }

  static void Tick(const std::shared_ptr<State>& state) {
    if (state->stopped.load()) return;
    for (size_t i = 0; i < state->loops.size(); ++i) {
      asio::post(*state->loops[i], [state, i] {
        state->last_turn[i].store(Steady::now().time_since_epoch().count());
      });
    }
    state->timer.expires_after(state->interval);
    state->timer.async_wait([state](const boost::system::error_code& ec) {
      if (!ec) Tick(state);
    });
  }

  const std::vector<asio::io_context*> loops;
  const std::chrono::milliseconds interval;
  std::vector<std::atomic<Steady::rep>> last_turn;  // per loop: when its last probe ran
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;  // strand only
  std::atomic<bool> stopped{false};
};

LoopMonitor::LoopMonitor(std::vector<asio::io_context*> loops, std::chrono::milliseconds interval)
    : state_(std::make_shared<State>(std::move(loops), interval)) {
  asio::post(state_->strand, [state = state_] { State::Tick(state); });
}

LoopMonitor::~LoopMonitor() {
  state_->stopped.store(true);
  asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
}

bool LoopMonitor::AllTurning(Steady::duration stall_after) const {
  const auto now = Steady::now();
  for (const auto& t : state_->last_turn) {
    if (now - Steady::time_point(Steady::duration(t.load())) > stall_after) return false;
  }
  return true;
}

}  // namespace ckpt
