#include "common/bearer_token.h"

#include "common/credential_file.h"

namespace ckpt::cli {

std::string BearerMetadataValue(std::string_view token) { return "Bearer " + std::string(token); }

std::optional<std::string> ParseBearerToken(std::string_view file_text, const std::string& option,
                                            const std::string& path, std::string* error) {
  const auto fail = [&](const std::string& why) -> std::optional<std::string> {
    if (error) *error = option + " " + path + ": " + why;
    return std::nullopt;
  };
  std::string_view token = file_text;
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' ||
                            token.back() == '\r')) {
    token.remove_suffix(1);
  }
  if (token.empty()) return fail("empty; the file must hold the token");
  for (size_t i = 0; i < token.size(); ++i) {
    const auto byte = static_cast<unsigned char>(token[i]);
    const std::string where = " at byte " + std::to_string(i + 1);
    if (byte == ' ' || byte == '\t') {
      return fail("the token holds a space or a tab" + where + "; a token is one word");
    }
    if (byte < 0x20 || byte == 0x7f) {
      return fail("the token holds a control character" + where +
                  " (a second line?); the file must hold the token alone");
    }
    if (byte > 0x7f) {
      return fail("the token holds a byte outside printable ASCII" + where);
    }
  }
  return std::string(token);
}

std::optional<std::string> ReadBearerTokenFile(const std::string& option, const std::string& path,
                                               std::string* error) {
  const std::optional<std::string> text = ReadCredentialFile(option, path, error);
  if (!text) return std::nullopt;
  return ParseBearerToken(*text, option, path, error);
}

}  // namespace ckpt::cli
