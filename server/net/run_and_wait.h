#pragma once
// RunAndWait: runs `fn` on `executor` (a strand) and waits for it, up to `timeout`, from a thread
// that is not the executor's. For closing a listening socket from the controlling thread: the
// socket belongs to its strand, and the port must be free when Stop returns.
// Threading: never call it on the executor's own thread (it would wait for itself).

#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>

namespace ckpt {

// True if `fn` ran within `timeout`; false if the loop was too busy (or not running).
template <typename Executor, typename Fn>
bool RunAndWait(const Executor& executor, Fn fn, std::chrono::milliseconds timeout) {
  auto ran = std::make_shared<std::promise<void>>();
  auto done = ran->get_future();
  boost::asio::post(executor, [fn = std::move(fn), ran]() mutable {
    fn();
    ran->set_value();
  });
  return done.wait_for(timeout) == std::future_status::ready;
}

}  // namespace ckpt
