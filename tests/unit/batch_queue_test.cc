// BatchQueue (common/batch_queue.h): one writer at a time, nothing left behind, order kept per
// producer. The threaded test is for the sanitizer builds as much as for its assertions.
#include "common/batch_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ckpt {
namespace {

using Queue = BatchQueue<int>;

std::vector<int> Drain(Queue::Node* node) {
  std::vector<int> values;
  while (node) {
    values.push_back(node->value);
    Queue::Free(std::exchange(node, node->next));
  }
  return values;
}

TEST(BatchQueueTest, TheFirstPushMakesTheWriterAndTheOthersWaitForIt) {
  Queue queue;
  EXPECT_TRUE(queue.Push(1)) << "an idle queue: the pusher writes";
  EXPECT_EQ(Drain(queue.TakeAll()), std::vector<int>{1});
  EXPECT_FALSE(queue.Push(2)) << "a writer is at work: it takes this";
  EXPECT_FALSE(queue.Push(3));
  EXPECT_FALSE(queue.TryIdle()) << "items wait: the writer keeps its role";
  EXPECT_EQ(Drain(queue.TakeAll()), (std::vector<int>{2, 3})) << "oldest first";
  EXPECT_EQ(queue.TakeAll(), nullptr);
  EXPECT_TRUE(queue.TryIdle());
  EXPECT_TRUE(queue.Push(4)) << "idle again: the next pusher writes";
  EXPECT_FALSE(queue.Push(5));
  // The destructor frees what is left (the leak checker of the sanitizer build sees to it).
}

TEST(BatchQueueTest, ManyProducersOneWriterAtATimeEveryItemOnceInOrder) {
  constexpr int kProducers = 4;
  constexpr int kItems = 20000;
  Queue queue;
  std::atomic<int> writers{0};
  std::atomic<bool> overlap{false};
  std::vector<std::vector<int>> seen(kProducers);  // written only by the writer of the moment
  // The writer's loop, run by whichever producer became the writer.
  auto serve = [&] {
    if (writers.fetch_add(1) != 0) overlap = true;
    for (;;) {
      for (int v : Drain(queue.TakeAll())) seen[v / kItems].push_back(v % kItems);
      writers.fetch_sub(1);
      if (queue.TryIdle()) return;
      if (writers.fetch_add(1) != 0) overlap = true;
    }
  };
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kItems; ++i) {
        if (queue.Push(p * kItems + i)) serve();
      }
    });
  }
  for (auto& t : producers) t.join();
  EXPECT_FALSE(overlap) << "two writers at once";
  EXPECT_TRUE(queue.Push(-1)) << "left idle, with nothing behind";
  EXPECT_EQ(Drain(queue.TakeAll()), std::vector<int>{-1});
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(kItems)) << "producer " << p;
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(seen[p][i], i) << "producer " << p;
  }
}

}  // namespace
}  // namespace ckpt
