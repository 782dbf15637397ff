// Result's misuse must not pass silently: an OK status in place of a value is an error, and the
// value of an error is never handed out.
#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace ckpt {
namespace {

TEST(ResultTest, AValueIsOkAndReadable) {
  Result<std::string> r(std::string("seven"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "seven");
  EXPECT_EQ(r->size(), 5u);
  EXPECT_TRUE(r.status().ok());
}

TEST(ResultTest, AnErrorKeepsItsStatus) {
  Result<int> r(Status::NotFound("no pipeline j/p"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "no pipeline j/p");
}

TEST(ResultTest, AnOkStatusWithoutAValueBecomesAnInternalError) {
  Result<int> r(Status::Ok());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("OK status"), std::string::npos);
}

TEST(ResultDeathTest, ReadingTheValueOfAnErrorAbortsWithTheError) {
  Result<int> r(Status::Unavailable("disk full"));
  EXPECT_DEATH((void)r.value(), "value of a Result that holds an error.*UNAVAILABLE: disk full");
  EXPECT_DEATH((void)*r, "UNAVAILABLE: disk full");
  const Result<std::string> c(Status::Internal("broken"));
  EXPECT_DEATH((void)c->size(), "INTERNAL: broken");
}

}  // namespace
}  // namespace ckpt
