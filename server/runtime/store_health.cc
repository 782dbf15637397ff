#include "runtime/store_health.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "common/daemon_clock.h"
#include "common/mutex.h"
#include "common/strand_assert.h"

namespace ckpt {

namespace asio = boost::asio;

struct StoreHealth::State {
  State(MetadataStore& store, asio::io_context& io, std::function<void(bool)> on_change,
        std::chrono::milliseconds interval)
      : store(store),
        strand(asio::make_strand(io)),
        timer(strand),
        on_change(std::move(on_change)),
        interval(interval) {}

  // The outcome of a write; see StoreHealth::Report.
  static void Report(const std::shared_ptr<State>& state, const Status& result);

  // Constant after construction.
  MetadataStore& store;
  asio::strand<asio::io_context::executor_type> strand;
  asio::basic_waitable_timer<DaemonClock, DaemonWaitTraits> timer;  // strand only
  const std::function<void(bool)> on_change;
  const std::chrono::milliseconds interval;

  std::atomic<bool> writable{true};  // mirrors writable_locked for readers without the lock
  Mutex mu;
  bool writable_locked CKPT_GUARDED_BY(mu) = true;
  bool probing CKPT_GUARDED_BY(mu) = false;  // a probe is armed or in flight
  bool stopped CKPT_GUARDED_BY(mu) = false;
  std::chrono::steady_clock::time_point failing_since CKPT_GUARDED_BY(mu);
  std::string failure CKPT_GUARDED_BY(mu);  // the latest failed write's status, while failing
};

void StoreHealth::State::Report(const std::shared_ptr<State>& state, const Status& result) {
  if (!result.ok() && result.code() != StatusCode::kUnavailable) return;  // the op's own failure
  const bool writable = result.ok();
  bool start_probing = false;
  double failed_seconds = 0;
  {
    MutexLock lock(state->mu);
    if (!writable) state->failure = result.ToString();
    if (state->stopped || writable == state->writable_locked) return;
    state->writable_locked = writable;
    state->writable.store(writable);
    const auto now = std::chrono::steady_clock::now();
    if (!writable) {
      state->failing_since = now;
      start_probing = !state->probing;
      state->probing = true;
    } else {
      failed_seconds = std::chrono::duration<double>(now - state->failing_since).count();
    }
    // Posted under the lock, so that the strand sees the changes in the order they happened.
    asio::post(state->strand, [state, writable] { state->on_change(writable); });
  }
  if (writable) {
    spdlog::info("store: writes succeed again after {:.1f} s; pipelines trigger again",
                 failed_seconds);
  } else {
    spdlog::error(
        "store: writes fail ({}); every pipeline holds its triggers and the daemon "
        "reports not ready; probing the store every {} ms",
        result.ToString(), state->interval.count());
  }
  if (start_probing) asio::post(state->strand, [state] { ArmProbe(state); });
}

void StoreHealth::ArmProbe(const std::shared_ptr<State>& state) {
  CKPT_ASSERT_ON_STRAND(state->strand);
  state->timer.expires_after(state->interval);
  state->timer.async_wait([state](const boost::system::error_code& ec) {
    {
      MutexLock lock(state->mu);
      if (ec || state->stopped || state->writable_locked) {
        state->probing = false;
        return;
      }
    }
    state->store.Probe([state](const Status& result) {
      State::Report(state, result);
      // Still failing: look again in a while (a write that succeeded meanwhile ended it).
      MutexLock lock(state->mu);
      if (state->stopped || state->writable_locked) {
        state->probing = false;
        return;
      }
      asio::post(state->strand, [state] { ArmProbe(state); });
    });
  });
}

StoreHealth::StoreHealth(MetadataStore& store, asio::io_context& io,
                         std::function<void(bool)> on_change,
                         std::chrono::milliseconds probe_interval)
    : state_(std::make_shared<State>(store, io, std::move(on_change), probe_interval)) {}

StoreHealth::~StoreHealth() { Stop(); }

void StoreHealth::Report(const Status& write_result) { State::Report(state_, write_result); }

bool StoreHealth::writable() const { return state_->writable.load(); }

std::string StoreHealth::WhyNotWritable() const {
  MutexLock lock(state_->mu);
  return state_->writable_locked ? std::string() : state_->failure;
}

void StoreHealth::Stop() {
  MutexLock lock(state_->mu);
  state_->stopped = true;
  // The timer is the strand's: cancel it there. A wait already fired sees `stopped`.
  asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
}

}  // namespace ckpt
