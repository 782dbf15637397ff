#pragma once
// The bearer token a client sends as `authorization: Bearer <token>` metadata (docs/SECURITY.md,
// "Clients"). The daemon knows it only by its SHA-256, so the bytes sent must be exactly the
// token: no newline an editor left at the end, nothing gRPC would refuse to put in a header.

#include <optional>
#include <string>
#include <string_view>

namespace ckpt::cli {

inline constexpr char kAuthorizationMetadataKey[] = "authorization";

// "Bearer <token>".
std::string BearerMetadataValue(std::string_view token);

// The token a token file holds: its text without trailing whitespace (spaces, tabs, CR, LF).
// std::nullopt with *error (if not null), prefixed "<option> <path>: ", when nothing is left or
// when the token holds a byte a header value cannot carry unchanged: a control character, a space
// or a tab inside it, or a byte outside printable ASCII (RFC 6750's token syntax is narrower
// still; the daemon decides what it accepts). The error never quotes the token.
std::optional<std::string> ParseBearerToken(std::string_view file_text, const std::string& option,
                                            const std::string& path, std::string* error);

// ReadCredentialFile, then ParseBearerToken.
std::optional<std::string> ReadBearerTokenFile(const std::string& option, const std::string& path,
                                               std::string* error);

}  // namespace ckpt::cli
