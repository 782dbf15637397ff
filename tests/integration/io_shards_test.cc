// IoShards (one event loop per io thread, pipelines placed by key), the systemd Watchdog that
// vouches for every loop, and the LoopMonitor behind /healthz: real threads, a real notify socket.
#include "runtime/io_shards.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "runtime/loop_monitor.h"
#include "systemd/notify.h"

namespace ckpt {
namespace {

using namespace std::chrono_literals;

// Runs `fn` on `io` and waits (up to 10 s) for it; returns false on time out.
template <typename Fn>
bool RunOn(boost::asio::io_context& io, Fn fn) {
  std::promise<void> done;
  boost::asio::post(io, [&] {
    fn();
    done.set_value();
  });
  return done.get_future().wait_for(10s) == std::future_status::ready;
}

TEST(IoShardsTest, AKeyAlwaysLandsOnTheSameShardAndKeysSpreadEvenly) {
  IoShards shards(4);
  std::map<size_t, int> per_shard;
  for (int i = 0; i < 20000; ++i) {
    const PipelineKey key{"job-" + std::to_string(i % 7), "p" + std::to_string(i)};
    const size_t index = IoShards::IndexFor(key, shards.size());
    ASSERT_LT(index, shards.size());
    EXPECT_EQ(&shards.For(key), &shards.at(index));
    EXPECT_EQ(IoShards::IndexFor(key, shards.size()), index) << "must not change between calls";
    ++per_shard[index];
  }
  ASSERT_EQ(per_shard.size(), 4u);
  for (const auto& [index, count] : per_shard) {
    EXPECT_GT(count, 4500) << "shard " << index;  // 5,000 each if even
    EXPECT_LT(count, 5500) << "shard " << index;
  }
  // Job and pipeline ids are separated, not concatenated.
  EXPECT_NE(IoShards::IndexFor({"a", "bc"}, 1 << 20), IoShards::IndexFor({"ab", "c"}, 1 << 20));
  // A fixed function of the key: a restart (another process) places pipelines as this one did.
  EXPECT_EQ(IoShards::IndexFor({"job", "pipeline"}, 1000003),
            IoShards::IndexFor({std::string("job"), std::string("pipeline")}, 1000003));
}

TEST(IoShardsTest, EachShardRunsOnItsOwnSingleThread) {
  IoShards shards(3);
  shards.Start();
  std::set<std::thread::id> threads;
  for (size_t i = 0; i < shards.size(); ++i) {
    std::set<std::thread::id> seen;
    for (int round = 0; round < 20; ++round) {
      ASSERT_TRUE(RunOn(shards.at(i), [&] { seen.insert(std::this_thread::get_id()); }));
    }
    EXPECT_EQ(seen.size(), 1u) << "shard " << i << " ran on more than one thread";
    EXPECT_EQ(seen.count(std::this_thread::get_id()), 0u) << "ran on the caller's thread";
    threads.insert(seen.begin(), seen.end());
  }
  EXPECT_EQ(threads.size(), 3u) << "two shards shared a thread";
  // The control loop has a thread of its own, no pipeline shard's.
  std::set<std::thread::id> control;
  ASSERT_TRUE(RunOn(shards.control(), [&] { control.insert(std::this_thread::get_id()); }));
  ASSERT_EQ(control.size(), 1u);
  EXPECT_EQ(threads.count(*control.begin()), 0u) << "the control loop shares a shard's thread";
  // Next hands out every shard in turn, never the control loop.
  std::set<boost::asio::io_context*> handed_out;
  for (size_t i = 0; i < 2 * shards.size(); ++i) handed_out.insert(&shards.Next());
  EXPECT_EQ(handed_out.size(), shards.size());
  EXPECT_EQ(handed_out.count(&shards.control()), 0u);
  EXPECT_EQ(shards.AllLoops().size(), shards.size() + 1);
  shards.Stop();
}

TEST(IoShardsTest, HandlersPostedBeforeStartRunAfterItAndStopDropsTheRest) {
  IoShards shards(2);
  std::atomic<int> ran{0};
  for (size_t i = 0; i < shards.size(); ++i) boost::asio::post(shards.at(i), [&] { ++ran; });
  shards.Start();
  ASSERT_TRUE(RunOn(shards.at(0), [] {}));
  ASSERT_TRUE(RunOn(shards.at(1), [] {}));
  EXPECT_EQ(ran.load(), 2);
  shards.Stop();
  shards.Stop();  // idempotent
  boost::asio::post(shards.at(0), [&] { ++ran; });
  EXPECT_EQ(ran.load(), 2) << "a stopped shard runs nothing";
}

TEST(IoShardsTest, AHandlerQueuedOnOneShardMayOwnTimersOfAnother) {
  // As at a daemon's shutdown: a handler still queued on shard 1 holds the last reference to an
  // object with a timer on shard 0. Destroying the shards must destroy that handler while shard
  // 0's io_context still exists (under ASan, the other order is a use after free).
  struct Owner {
    explicit Owner(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;
  };
  auto shards = std::make_unique<IoShards>(2);
  auto owner = std::make_shared<Owner>(shards->at(0));
  owner->timer.expires_after(1h);
  owner->timer.async_wait([](const boost::system::error_code&) {});
  std::weak_ptr<Owner> watch = owner;
  boost::asio::post(shards->at(1), [owner = std::move(owner)] {});
  shards->Stop();
  ASSERT_FALSE(watch.expired()) << "the queued handler holds it until the shards go";
  shards.reset();
  EXPECT_TRUE(watch.expired());
}

// A unix datagram socket standing in for systemd's NOTIFY_SOCKET.
class NotifySocket {
 public:
  NotifySocket() {
    path_ = (std::filesystem::temp_directory_path() /
             ("ckpt-notify-" + std::to_string(::getpid()) + ".sock"))
                .string();
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~NotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool bound() const { return bound_; }

  // Counts WATCHDOG=1 messages that arrive within `window`.
  int PingsWithin(std::chrono::milliseconds window) {
    int pings = 0;
    const auto deadline = std::chrono::steady_clock::now() + window;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return pings;
      timeval tv{static_cast<time_t>(left.count() / 1000000),
                 static_cast<suseconds_t>(left.count() % 1000000)};
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      char buf[512];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf) - 1, 0);
      if (n <= 0) continue;  // timed out (the loop re-checks the deadline) or interrupted
      if (std::string(buf, static_cast<size_t>(n)).find("WATCHDOG=1") != std::string::npos) {
        ++pings;
      }
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST(WatchdogTest, PingsWhileEveryLoopTurnsAndStopsWhenOneIsWedged) {
  NotifySocket notify;
  ASSERT_TRUE(notify.bound());
  IoShards shards(2);
  shards.Start();
  {
    // 100 ms: a tick every 50 ms.
    systemd::Watchdog watchdog({&shards.at(0), &shards.at(1)}, 100ms);
    EXPECT_GE(notify.PingsWithin(500ms), 4) << "both loops turn: pings every 50 ms";

    // Wedge the second loop (the timer lives on the first, which keeps turning).
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    boost::asio::post(shards.at(1), [released] { released.wait(); });
    notify.PingsWithin(150ms);  // a tick before the wedge may still ping
    EXPECT_EQ(notify.PingsWithin(400ms), 0) << "a wedged loop must stop the pings";

    release.set_value();
    EXPECT_GE(notify.PingsWithin(500ms), 2) << "pings resume once the loop turns again";
    shards.Stop();  // the watchdog goes after its loops, as in main.cc
  }
}

TEST(LoopMonitorTest, AWedgedLoopIsSeenAndItsReturnToo) {
  IoShards shards(2);
  shards.Start();
  LoopMonitor monitor(shards.AllLoops(), 20ms);
  EXPECT_TRUE(monitor.AllTurning(200ms));
  std::promise<void> release;
  auto released = release.get_future().share();
  boost::asio::post(shards.at(1), [released] { released.wait(); });
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (monitor.AllTurning(200ms) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(monitor.AllTurning(200ms)) << "a loop wedged for 200 ms was not noticed";
  release.set_value();
  bool back = false;
  for (auto until = std::chrono::steady_clock::now() + 10s;
       !back && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(10ms)) {
    back = monitor.AllTurning(200ms);
  }
  EXPECT_TRUE(back) << "the loop turns again";
  shards.Stop();
}

}  // namespace
}  // namespace ckpt
