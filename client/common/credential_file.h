#pragma once
// Reading a credential file (a PEM certificate or key, a bearer token) the way every client does:
// only a regular file of bounded size, never blocking on a FIFO or a device put in its place, and
// an error that names the option and the file.

#include <cstdint>
#include <optional>
#include <string>

namespace ckpt::cli {

// A certificate bundle or a token is a few KiB; anything larger is the wrong file.
inline constexpr uint64_t kMaxCredentialFileBytes = 1 << 20;

// The file's bytes, or std::nullopt with one line in *error (if not null), e.g.
//   "--ca-file /etc/ckpt/ca.pem: no such file"
//   "--key-file /etc/ckpt/w.key: cannot read it: Permission denied"
//   "--ca-file /etc/ckpt: is a directory, not a file"
//   "--token-file /dev/zero: not a regular file (a FIFO, a device?)"
//   "--ca-file big.pem: larger than 1 MiB; that is not a credential file"
// `option` is what the user set ("--ca-file" for a CLI, "ca_file" for the SDK).
std::optional<std::string> ReadCredentialFile(const std::string& option, const std::string& path,
                                              std::string* error);

}  // namespace ckpt::cli
