#pragma once
// StoreHealth: whether the store takes writes (docs/DESIGN.md, "Failure and restart"). A store
// write that fails cleanly with UNAVAILABLE (disk full, read-only, an I/O error before the commit)
// marks the store failing: the daemon reports not ready, every pipeline holds its triggers (a round
// would only fail at its commit), and a probe write goes to the store about once a second. The
// first write that succeeds again, a probe or any other, marks it writable, and the pipelines go on
// by themselves. A failure of the op itself (a duplicate id, a deleted pipeline) says nothing about
// the store and is not reported here. An outcome the store cannot know stops the daemon elsewhere
// (SqliteStore's fail-stop), never here.
//
// Threading: Report and writable() are safe from any thread (store callbacks run on the store's
// writer thread). The probe timer lives on its own strand of `io`. `on_change` runs on that strand,
// once per change, in order; it must not block.
// Lifetime: the state is shared with the timer and the probes' callbacks, so a callback that
// arrives after the object is gone only touches that state. Stop() before the io_context stops.

#include <atomic>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "store/metadata_store.h"

namespace ckpt {

class StoreHealth {
 public:
  // `store` must outlive every probe (the daemon flushes the store before it goes).
  StoreHealth(MetadataStore& store, boost::asio::io_context& io,
              std::function<void(bool writable)> on_change,
              std::chrono::milliseconds probe_interval = std::chrono::seconds(1));
  ~StoreHealth();
  StoreHealth(const StoreHealth&) = delete;
  StoreHealth& operator=(const StoreHealth&) = delete;

  // The outcome of a store write. OK marks the store writable, UNAVAILABLE failing; other codes
  // are the op's own failure and change nothing.
  void Report(const Status& write_result);
  bool writable() const;
  // While the store is failing, the latest failed write's status (such as etcd's "database space
  // exceeded"); "" while it is writable. For /readyz.
  std::string WhyNotWritable() const;
  // No more probes or changes from now on (daemon shutdown).
  void Stop();

 private:
  struct State;
  static void ArmProbe(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace ckpt
