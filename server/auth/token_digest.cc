#include "auth/token_digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace ckpt {

std::string Sha256(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    return {};  // never with a built-in digest; an empty digest matches no principal
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Sha256Hex(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : Sha256(text)) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

std::string DecodeSha256Hex(std::string_view hex) {
  if (hex.size() != 64) return {};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string raw;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = nibble(hex[i]);
    const int low = nibble(hex[i + 1]);
    if (high < 0 || low < 0) return {};
    raw += static_cast<char>(high << 4 | low);
  }
  return raw;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace ckpt
