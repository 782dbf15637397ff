#include "core/session_table.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace ckpt {
namespace {

template <typename V>
std::vector<SessionId> Ids(const SessionTable<V>& table) {
  std::vector<SessionId> ids;
  for (const auto& [id, value] : table) ids.push_back(id);
  return ids;
}

TEST(SessionTable, KeepsItsEntriesInIdOrderWhateverTheOrderOfInserts) {
  SessionTable<std::string> table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.begin(), table.end());
  table[7] = "seven";
  table[3] = "three";
  table[9] = "nine";
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(Ids(table), (std::vector<SessionId>{3, 7, 9}));
  EXPECT_EQ(table.at(7), "seven");
  EXPECT_TRUE(table.contains(3));
  EXPECT_EQ(table.count(4), 0u);
  EXPECT_EQ(table.find(4), table.end());
  EXPECT_THROW(table.at(4), std::out_of_range);
  table[7] = "again";  // an existing id: the same entry
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.find(7)->second, "again");
}

TEST(SessionTable, IterationStopsAtTheEndWhenTheLastEntriesAreErased) {
  SessionTable<int> table;
  for (SessionId id = 1; id <= 5; ++id) table[id] = static_cast<int>(id);
  EXPECT_EQ(table.erase(5), 1u);
  EXPECT_EQ(table.erase(4), 1u);  // two dead at the end, still fewer than the live
  EXPECT_EQ(Ids(table), (std::vector<SessionId>{1, 2, 3}));
  EXPECT_EQ(table.find(5), table.end());
  EXPECT_EQ(table.find(4), table.end());
  EXPECT_EQ(table.erase(4), 0u) << "erased once";
  int sum = 0;
  for (const auto& [id, value] : table) sum += value;
  EXPECT_EQ(sum, 6);
}

TEST(SessionTable, AnErasedIdComesBackEmptyAndInPlace) {
  SessionTable<std::string> table;
  table[1] = "a";
  table[2] = "b";
  table[3] = "c";
  table.erase(table.find(2));
  EXPECT_FALSE(table.contains(2));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table[2], "") << "value-initialized, not what it held before";
  EXPECT_EQ(Ids(table), (std::vector<SessionId>{1, 2, 3}));
  EXPECT_EQ(table.size(), 3u);
}

TEST(SessionTable, AnErasedValueIsReleasedAtOnce) {
  SessionTable<std::shared_ptr<int>> table;
  auto held = std::make_shared<int>(1);
  table[1] = held;
  table[2] = std::make_shared<int>(2);
  table[3] = std::make_shared<int>(3);
  EXPECT_EQ(held.use_count(), 2);
  table.erase(1);
  EXPECT_EQ(held.use_count(), 1) << "a sink must not outlive its session's end";
}

TEST(SessionTable, ErasingEveryEntryLeavesAnEmptyTableThatTakesNewOnes) {
  SessionTable<std::string> table;
  for (SessionId id = 1; id <= 100; ++id) table[id] = std::to_string(id);
  for (SessionId id = 1; id <= 100; ++id) table.erase(id);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.begin(), table.end());
  table[50] = "again";
  EXPECT_EQ(Ids(table), (std::vector<SessionId>{50}));
}

TEST(SessionTable, AMovedFromTableIsEmptyAndUsable) {
  SessionTable<int> table;
  table[1] = 10;
  table[2] = 20;
  SessionTable<int> moved(std::move(table));
  EXPECT_EQ(Ids(moved), (std::vector<SessionId>{1, 2}));
  EXPECT_TRUE(table.empty());  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(table.begin(), table.end());
  table[3] = 30;
  EXPECT_EQ(table.size(), 1u);
  SessionTable<int> assigned;
  assigned[9] = 90;
  assigned = std::move(moved);
  EXPECT_EQ(Ids(assigned), (std::vector<SessionId>{1, 2}));
  EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move)
}

// A hundred thousand streams, one a task, ending in an order of their own: every step agrees with
// a std::map given the same operations.
TEST(SessionTable, AgreesWithAMapThroughAHundredThousandRandomOperations) {
  SessionTable<int> table;
  std::map<SessionId, int> model;
  std::mt19937_64 random(20261204);
  SessionId next = 1;
  for (int step = 0; step < 100000; ++step) {
    const auto dice = random() % 10;
    if (dice < 5) {  // a new stream, mostly the newest id, sometimes one that arrived late
      const SessionId id = dice == 0 && next > 10 ? next - 1 - random() % 10 : next++;
      const int value = static_cast<int>(random() % 1000);
      table[id] = value;
      model[id] = value;
    } else if (!model.empty()) {  // an end, of any stream (or of one that already ended)
      const SessionId id = 1 + random() % next;
      EXPECT_EQ(table.erase(id), model.erase(id)) << "id " << id << " at step " << step;
    }
    if (step % 997 == 0) {
      ASSERT_EQ(table.size(), model.size()) << "step " << step;
      auto it = table.begin();
      for (const auto& [id, value] : model) {
        ASSERT_NE(it, table.end()) << "step " << step;
        ASSERT_EQ(it->first, id);
        ASSERT_EQ(it->second, value);
        ++it;
      }
      ASSERT_EQ(it, table.end()) << "step " << step;
    }
  }
  for (const auto& [id, value] : model) ASSERT_EQ(table.at(id), value);
  for (SessionId id = 1; id < next; ++id) table.erase(id);
  EXPECT_TRUE(table.empty());
}

TEST(SessionTable, AConstTableFindsAndIterates) {
  SessionTable<int> table;
  table[4] = 40;
  table[2] = 20;
  const SessionTable<int>& view = table;
  EXPECT_EQ(view.at(4), 40);
  EXPECT_EQ(view.find(2)->second, 20);
  EXPECT_EQ(view.find(3), view.end());
  EXPECT_EQ(Ids(view), (std::vector<SessionId>{2, 4}));
}

}  // namespace
}  // namespace ckpt
