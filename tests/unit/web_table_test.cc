// The web view's pipeline list: query parsing, filtering, sorting with ties by key, paging.
#include "web/pipeline_table.h"

#include <gtest/gtest.h>

#include <deque>

namespace ckpt {
namespace {

class WebTableTest : public ::testing::Test {
 protected:
  PipelineRow Row(const std::string& job, const std::string& pipeline, PipelineState state,
                  int64_t duration_ms = 0, uint64_t failed = 0) {
    keys_.push_back(PipelineKey{job, pipeline});
    PipelineRow row;
    row.key = &keys_.back();
    row.state = state;
    row.last_duration_ms = duration_ms;
    row.failed = failed;
    return row;
  }

  static std::vector<std::string> Names(const TablePage& page) {
    std::vector<std::string> names;
    for (const auto& row : page.rows) names.push_back(row.key->job_id + "/" + row.key->pipeline_id);
    return names;
  }

  static TableQuery Query(const std::string& query_string) {
    auto params = ParseQuery(query_string);
    EXPECT_TRUE(params.has_value());
    auto query = ParseTableQuery(*params);
    EXPECT_TRUE(query.ok()) << query.status().message();
    return query.ok() ? *query : TableQuery{};
  }

  std::vector<PipelineRow> Fleet() {
    return {Row("etl", "b", PipelineState::kRunning, 30, 1),
            Row("etl", "a", PipelineState::kPaused, 10, 0),
            Row("billing", "z", PipelineState::kRunning, 30, 5),
            Row("etl-2", "c", PipelineState::kFailed, 20, 2)};
  }

  std::deque<PipelineKey> keys_;  // stable addresses for the rows' keys
};

TEST_F(WebTableTest, DefaultsAndEveryParameterChecked) {
  TableQuery q = Query("");
  EXPECT_EQ(q.order, RowOrder::kKey);
  EXPECT_FALSE(q.descending);
  EXPECT_EQ(q.offset, 0u);
  EXPECT_EQ(q.limit, 100u);
  EXPECT_EQ(q.refresh_s, 5);
  EXPECT_FALSE(q.state.has_value());
  for (const char* bad : {"state=running", "sort=name", "order=up", "offset=-1", "offset=x",
                          "limit=0", "limit=1001", "limit=5x", "refresh=3601", "refresh=-1"}) {
    SCOPED_TRACE(bad);
    auto query = ParseTableQuery(*ParseQuery(bad));
    ASSERT_FALSE(query.ok());
    EXPECT_EQ(query.status().code(), StatusCode::kInvalidArgument);
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_EQ(query.status().message().rfind(name + ":", 0), 0u) << query.status().message();
  }
  EXPECT_FALSE(ParseTableQuery(*ParseQuery("job=" + std::string(300, 'j'))).ok());
}

TEST_F(WebTableTest, AQueryStringAsksForTheSameQuery) {
  TableQuery q =
      Query("job=a%26b&state=PAUSED&sort=duration&order=desc&offset=7&limit=9&refresh=0");
  EXPECT_EQ(q.job, "a&b");
  EXPECT_EQ(q.state, PipelineState::kPaused);
  EXPECT_EQ(q.order, RowOrder::kDuration);
  EXPECT_TRUE(q.descending);
  TableQuery again = Query(TableQueryString(q));
  EXPECT_EQ(again.job, q.job);
  EXPECT_EQ(again.state, q.state);
  EXPECT_EQ(again.order, q.order);
  EXPECT_EQ(again.descending, q.descending);
  EXPECT_EQ(again.offset, 7u);
  EXPECT_EQ(again.limit, 9u);
  EXPECT_EQ(again.refresh_s, 0);
}

TEST_F(WebTableTest, FiltersByPartOfTheJobAndByState) {
  TablePage page = SelectPage(Fleet(), Query("job=etl"));
  EXPECT_EQ(page.total, 4u);
  EXPECT_EQ(page.matching, 3u);
  EXPECT_EQ(Names(page), (std::vector<std::string>{"etl/a", "etl/b", "etl-2/c"}));
  page = SelectPage(Fleet(), Query("state=RUNNING"));
  EXPECT_EQ(Names(page), (std::vector<std::string>{"billing/z", "etl/b"}));
  page = SelectPage(Fleet(), Query("job=etl&state=RUNNING"));
  EXPECT_EQ(Names(page), (std::vector<std::string>{"etl/b"}));
}

TEST_F(WebTableTest, SortsWithTiesByKeyEitherWay) {
  EXPECT_EQ(Names(SelectPage(Fleet(), Query("sort=duration"))),
            (std::vector<std::string>{"etl/a", "etl-2/c", "billing/z", "etl/b"}));
  EXPECT_EQ(Names(SelectPage(Fleet(), Query("sort=duration&order=desc"))),
            (std::vector<std::string>{"etl/b", "billing/z", "etl-2/c", "etl/a"}));
  EXPECT_EQ(Names(SelectPage(Fleet(), Query("sort=failures&order=desc"))),
            (std::vector<std::string>{"billing/z", "etl-2/c", "etl/b", "etl/a"}));
  EXPECT_EQ(Names(SelectPage(Fleet(), Query("sort=state"))),
            (std::vector<std::string>{"billing/z", "etl/b", "etl/a", "etl-2/c"}));
}

TEST_F(WebTableTest, PagesCoverEveryRowOnceAndStopAtTheEnd) {
  std::vector<PipelineRow> rows;
  for (int i = 0; i < 250; ++i) {
    rows.push_back(
        Row("job", "p" + std::to_string(1000 + (i * 37) % 250), PipelineState::kRunning, i % 7));
  }
  std::vector<std::string> seen;
  for (size_t offset = 0; offset < 300; offset += 100) {
    TablePage page =
        SelectPage(rows, Query("sort=duration&limit=100&offset=" + std::to_string(offset)));
    EXPECT_EQ(page.matching, 250u);
    for (const auto& name : Names(page)) seen.push_back(name);
  }
  ASSERT_EQ(seen.size(), 250u);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end()) << "no row on two pages";
  TablePage past = SelectPage(rows, Query("offset=5000"));
  EXPECT_TRUE(past.rows.empty());
  EXPECT_EQ(past.matching, 250u);
}

}  // namespace
}  // namespace ckpt
