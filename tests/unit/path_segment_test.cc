#include "core/path_segment.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ckpt {
namespace {

TEST(PathSegment, PlainIdsStayReadable) {
  EXPECT_EQ(EncodePathSegment("orders-eu_v2.1"), "orders-eu_v2.1");
  EXPECT_EQ(EncodePathSegment("...x"), "...x") << "only '.' and '..' themselves name directories";
}

TEST(PathSegment, SlashesAndParentDirectoriesCannotEscape) {
  EXPECT_EQ(EncodePathSegment("a/b"), "a%2Fb");
  EXPECT_EQ(EncodePathSegment(".."), "%2E%2E");
  EXPECT_EQ(EncodePathSegment("."), "%2E");
  EXPECT_EQ(EncodePathSegment("../../etc"), "..%2F..%2Fetc");
  for (const std::string id : {"a/b", "..", ".", "../x", "/abs", "x\\y", " sp ace"}) {
    const std::string encoded = EncodePathSegment(id);
    EXPECT_EQ(encoded.find('/'), std::string::npos) << id;
    EXPECT_NE(encoded, "..") << id;
    EXPECT_NE(encoded, ".") << id;
  }
}

TEST(PathSegment, DistinctIdsNeverShareADirectory) {
  // "%" is itself encoded, so an id that looks like an encoding cannot collide with one.
  const std::set<std::string> encoded = {EncodePathSegment("a/b"), EncodePathSegment("a%2Fb"),
                                         EncodePathSegment(".."),  EncodePathSegment("%2E%2E"),
                                         EncodePathSegment("ä"),   EncodePathSegment("%C3%A4")};
  EXPECT_EQ(encoded.size(), 6u);
}

}  // namespace
}  // namespace ckpt

namespace ckpt {
namespace {

TEST(PathIsUnder, AcceptsOnlyPathsBelowTheRoot) {
  EXPECT_TRUE(PathIsUnder("/data/sp", "/data/sp"));
  EXPECT_TRUE(PathIsUnder("/data/sp/job/1", "/data/sp"));
  EXPECT_TRUE(PathIsUnder("/data/sp/job/1", "/data/sp/"));
  EXPECT_TRUE(PathIsUnder("s3://bucket/sp/x", "s3://bucket/sp"));
  EXPECT_FALSE(PathIsUnder("/data/spx", "/data/sp"));
  EXPECT_FALSE(PathIsUnder("/data/sp/../etc", "/data/sp"));
  EXPECT_FALSE(PathIsUnder("/data/sp/a/..", "/data/sp"));
  EXPECT_FALSE(PathIsUnder("/data/sp/./a", "/data/sp"));
  EXPECT_FALSE(PathIsUnder("/data/sp/a\\..\\b", "/data/sp"));
  EXPECT_FALSE(PathIsUnder("/etc/passwd", "/data/sp"));
  EXPECT_FALSE(PathIsUnder("s3://other/sp/x", "s3://bucket/sp"));
  EXPECT_FALSE(PathIsUnder("/anything", ""));
  EXPECT_FALSE(PathIsUnder("s3://bucket/sp/%2e%2e/other", "s3://bucket/sp"));
  EXPECT_FALSE(PathIsUnder("s3://bucket/sp/%2E./other", "s3://bucket/sp"));
  EXPECT_TRUE(PathIsUnder("s3://bucket/sp/a%2fb/%2x", "s3://bucket/sp"));
}

}  // namespace
}  // namespace ckpt
