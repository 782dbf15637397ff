// What the SDK sends as a failed restore's reason (restore_result.reason): the application's
// exception text, at most 1 KiB, cut on a character boundary and valid UTF-8 whatever it held (a
// protobuf string that is not would fail the whole message).
#include <gtest/gtest.h>

#include <string>

#include "sdk/messages.h"

namespace ckpt::sdk::internal {
namespace {

TEST(SdkRestoreReason, ValidTextGoesAsItIs) {
  EXPECT_EQ(ReasonForTheWire("chk-41/0 is truncated: état", 1024), "chk-41/0 is truncated: état");
}

TEST(SdkRestoreReason, BytesThatAreNotUtf8AreReplaced) {
  EXPECT_EQ(ReasonForTheWire(std::string("bad \xff\xfe end"), 1024), "bad ?? end");
  EXPECT_EQ(ReasonForTheWire(std::string("cut \xc3"), 1024), "cut ?") << "a sequence cut short";
  EXPECT_EQ(ReasonForTheWire(std::string("\xe2\x82x"), 1024), "??x") << "a continuation missing";
}

TEST(SdkRestoreReason, ALongTextIsCutOnACharacterBoundary) {
  EXPECT_EQ(ReasonForTheWire(std::string(5000, 'x'), 1024).size(), 1024u);
  const std::string cut = ReasonForTheWire(std::string(1023, 'x') + "\xc3\xa9", 1024);
  EXPECT_EQ(cut, std::string(1023, 'x')) << "not half of the last character";
}

TEST(SdkRestoreReason, TheMessageCarriesTheCutReason) {
  const auto message = MakeRestoreResult(41, "0", false, std::string(7 << 20, 'x'));
  EXPECT_EQ(message.restore_result().reason().size(), kMaxRestoreReasonBytes);
  EXPECT_EQ(message.restore_result().checkpoint_id(), 41);
  EXPECT_FALSE(message.restore_result().ok());
}

}  // namespace
}  // namespace ckpt::sdk::internal
