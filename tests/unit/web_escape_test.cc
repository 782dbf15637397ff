// Ids in the web view: HTML escaping, percent-encoding both ways, query strings.
#include "web/escape.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

TEST(WebEscape, HtmlEscapesEveryCharacterThatCouldBecomeMarkup) {
  EXPECT_EQ(HtmlEscape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
  EXPECT_EQ(HtmlEscape("plain-id_1.2 ü"), "plain-id_1.2 ü");
  EXPECT_EQ(HtmlEscape("&amp;"), "&amp;amp;") << "already-escaped text is escaped again";
}

TEST(WebEscape, PercentEncodingKeepsEveryByteInItsSegment) {
  EXPECT_EQ(PercentEncode("a/b?c#d&e%f g<"), "a%2Fb%3Fc%23d%26e%25f%20g%3C");
  EXPECT_EQ(PercentEncode("Az09-._~"), "Az09-._~");
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  const std::string encoded = PercentEncode(every_byte);
  EXPECT_EQ(encoded.find('/'), std::string::npos);
  EXPECT_EQ(encoded.find('?'), std::string::npos);
  EXPECT_EQ(PercentDecode(encoded), every_byte);
}

TEST(WebEscape, PercentDecodingRefusesBrokenEscapes) {
  EXPECT_EQ(PercentDecode("a%2fb%2F"), "a/b/");
  EXPECT_EQ(PercentDecode("a+b"), "a+b");
  EXPECT_EQ(PercentDecode("a+b", /*plus_is_space=*/true), "a b");
  for (const char* bad : {"%", "%4", "a%zz", "%g0", "abc%"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(PercentDecode(bad).has_value());
  }
}

TEST(WebEscape, QueryStringsInOrderWithTheLastValueWinning) {
  auto params = ParseQuery("job=a%26b&state=&flag&&job=c+d");
  ASSERT_TRUE(params.has_value());
  ASSERT_EQ(params->size(), 4u);
  EXPECT_EQ((*params)[0], (std::pair<std::string, std::string>{"job", "a&b"}));
  EXPECT_EQ((*params)[2], (std::pair<std::string, std::string>{"flag", ""}));
  EXPECT_EQ(QueryValue(*params, "job"), "c d");
  EXPECT_EQ(QueryValue(*params, "state"), "");
  EXPECT_FALSE(QueryValue(*params, "sort").has_value());
  EXPECT_FALSE(ParseQuery("job=%zz").has_value());
  EXPECT_TRUE(ParseQuery("")->empty());
}

}  // namespace
}  // namespace ckpt
