#pragma once
// What a client is told about securing its channel to ckptd (docs/SECURITY.md, "Clients"), and the
// checks of it made before any connection: TLS when a CA, a client certificate or a key is given
// (mutual TLS with both of the latter), and a bearer token. channel_security.h turns the result
// into gRPC credentials and call metadata.

#include <optional>
#include <string>

namespace ckpt::cli {

// Where the credentials are, as the user gave them; empty: not given.
struct SecurityOptions {
  std::string ca_file;     // PEM roots to check the daemon's certificate (TLS: system roots)
  std::string cert_file;   // PEM client certificate chain (with key_file: mutual TLS)
  std::string key_file;    // its unencrypted PEM private key
  std::string token_file;  // the bearer token (trailing whitespace ignored)
  // The name the daemon's certificate must hold, instead of the host of the address (a daemon
  // reached by IP address, through a tunnel, ...). Needs TLS.
  std::string tls_server_name;

  bool tls() const { return !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

// What errors call each option: the flags of a CLI, or the SDK's field names.
struct SecurityOptionNames {
  const char* ca_file;
  const char* cert_file;
  const char* key_file;
  const char* token_file;
  const char* tls_server_name;
};
inline constexpr SecurityOptionNames kSecurityFlagNames{"--ca-file", "--cert-file", "--key-file",
                                                        "--token-file", "--tls-server-name"};

// What the files held, checked. Holds the private key and the token: never log it.
struct ChannelSecurity {
  bool tls = false;
  std::string ca_pem;  // empty with tls: gRPC's default roots
  std::string cert_pem;
  std::string key_pem;
  std::string token;  // empty: no token is sent
  std::string tls_server_name;
};

// Reads and checks every file given: missing, unreadable, not a regular file, larger than 1 MiB,
// not PEM, a key without its certificate (or the reverse), a key that is not the certificate's, an
// encrypted key, an expired client certificate, an empty or malformed token; --tls-server-name
// without TLS. std::nullopt with one line naming the option (and the file) in *error.
std::optional<ChannelSecurity> LoadChannelSecurity(const SecurityOptions& options,
                                                   const SecurityOptionNames& names,
                                                   std::string* error);

// "" unless a token would travel in clear text to a target that is not loopback (see
// loopback_target.h): then the reason, naming the token option and saying how to use TLS.
std::string CheckTokenTransport(const std::string& target, const ChannelSecurity& security,
                                const SecurityOptionNames& names);

}  // namespace ckpt::cli
