// Client strings made safe to print: no forged lines, no terminal escapes, bounded length.
#include "core/printable.h"

#include <gtest/gtest.h>

namespace ckpt {
namespace {

TEST(Printable, ControlCharactersAndInvalidUtf8BecomeHexEscapes) {
  EXPECT_EQ(Printable("w1\n2026-12-01T00:00:00.000 critical forged"),
            "w1\\x0a2026-12-01T00:00:00.000 critical forged");
  EXPECT_EQ(Printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(Printable("a\xc2\x9b"
                      "31m"),
            "a\\xc2\\x9b31m")
      << "a C1 control is a terminal escape too";
  EXPECT_EQ(Printable("bad\xff\xfe"), "bad\\xff\\xfe");
  EXPECT_EQ(Printable("back\\slash"), "back\\\\slash") << "so that an escape cannot be faked";
  EXPECT_EQ(Printable("del\x7f"), "del\\x7f");
}

TEST(Printable, EverythingElsePassesAsItIs) {
  EXPECT_EQ(Printable("task \"0\" <a> ü α 日本 😀 'q'"), "task \"0\" <a> ü α 日本 😀 'q'");
}

TEST(Printable, LongTextIsCutSayingHowMuchWasLeftOut) {
  const std::string huge(7 * 1024 * 1024, 'x');
  const std::string printed = Printable(huge);
  EXPECT_LT(printed.size(), 400u);
  EXPECT_NE(printed.find("...(+" + std::to_string(huge.size() - kMaxPrintedBytes) + " bytes)"),
            std::string::npos);
  EXPECT_EQ(Printable("abcdef", 3), "abc...(+3 bytes)");
}

TEST(Printable, Utf8Validity) {
  EXPECT_TRUE(IsValidUtf8("plain ü 日本 😀"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe6\x97"));          // cut short
}

TEST(Printable, FormatCharactersAreShownNotObeyed) {
  // U+202E would print what follows it right to left: "gnp<U+202E>exe" would read "gnpexe".
  EXPECT_EQ(Printable("gnp\xe2\x80\xae"
                      "exe"),
            "gnp\\u{202e}exe");
  EXPECT_EQ(Printable("a\xe2\x80\x8b"
                      "b"),
            "a\\u{200b}b");
  EXPECT_EQ(Printable("soft\xc2\xad"
                      "hy"),
            "soft\\u{00ad}hy");
  EXPECT_EQ(PrintableLine("x\xef\xbb\xbfy", 100), "x\\u{feff}y");
  EXPECT_EQ(Printable("\xce\xb1\xce\xb2"), "\xce\xb1\xce\xb2") << "letters stay as they are";
  EXPECT_TRUE(
      HasFormatCharacter("gnp\xe2\x80\xae"
                         "exe"));
  EXPECT_FALSE(HasFormatCharacter("\xe6\x97\xa5"));
}

}  // namespace
}  // namespace ckpt
