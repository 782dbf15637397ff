#pragma once
// SHA-256 of bearer tokens: tokens are configured by their digest, so the config file and the
// daemon's memory never hold one in clear.

#include <string>
#include <string_view>

namespace ckpt {

// The 32 raw bytes of SHA-256(text).
std::string Sha256(std::string_view text);
// SHA-256(text) as 64 lowercase hex digits: what `printf %s "$TOKEN" | sha256sum` prints and
// auth.principals[].token_sha256 holds.
std::string Sha256Hex(std::string_view text);
// 64 hex digits (either case) to the 32 raw bytes; "" if `hex` is not that.
std::string DecodeSha256Hex(std::string_view hex);
// Equal, in time that depends only on the sizes.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace ckpt
