#include "common/security_flags.h"

namespace ckpt::cli {

void AddSecurityFlags(CLI::App* app, SecurityOptions* options, const std::string& env_prefix,
                      ClearTextToken clear_text_token) {
  const auto add = [&](const char* flag, std::string* value, const char* env_suffix,
                       const std::string& help, const char* type) {
    CLI::Option* option = app->add_option(flag, *value, help)->type_name(type)->group("Security");
    if (!env_prefix.empty()) option->envname(env_prefix + env_suffix);
  };
  add("--ca-file", &options->ca_file, "CA_FILE",
      "PEM CA certificate(s) to check the daemon's certificate with; connects with TLS", "PATH");
  add("--cert-file", &options->cert_file, "CERT_FILE",
      "PEM client certificate (chain) for mutual TLS; needs --key-file; connects with TLS (with "
      "gRPC's default roots unless --ca-file)",
      "PATH");
  add("--key-file", &options->key_file, "KEY_FILE", "PEM private key of --cert-file, unencrypted",
      "PATH");
  add("--token-file", &options->token_file, "TOKEN_FILE",
      std::string("File holding a bearer token, sent as 'authorization: Bearer <token>'") +
          (clear_text_token == ClearTextToken::kOnlyToLoopback
               ? " (without TLS only to a loopback address)"
               : " (also in clear text to any address)"),
      "PATH");
  add("--tls-server-name", &options->tls_server_name, "TLS_SERVER_NAME",
      "Name the daemon's certificate must hold, instead of the host in the address (needs TLS)",
      "NAME");
}

}  // namespace ckpt::cli
