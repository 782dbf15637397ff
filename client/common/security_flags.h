#pragma once
// The command-line flags of channel security, the same in ckptctl, ckpt-worker-sim and
// ckpt-hostile: --ca-file, --cert-file, --key-file, --token-file, --tls-server-name.

#include <CLI/CLI.hpp>
#include <string>

#include "common/security_options.h"

namespace ckpt::cli {

// What --help says of a token without TLS: whether the program checks CheckTokenTransport.
enum class ClearTextToken { kOnlyToLoopback, kAnywhere };

// Adds the five flags to `app`, filling *options (which must outlive the app) while parsing. With
// a non-empty env_prefix each flag is also read from <env_prefix>CA_FILE, <env_prefix>CERT_FILE,
// <env_prefix>KEY_FILE, <env_prefix>TOKEN_FILE and <env_prefix>TLS_SERVER_NAME; a flag given wins
// over its variable. The options go in a group named "Security" in --help.
void AddSecurityFlags(CLI::App* app, SecurityOptions* options, const std::string& env_prefix,
                      ClearTextToken clear_text_token = ClearTextToken::kOnlyToLoopback);

}  // namespace ckpt::cli
