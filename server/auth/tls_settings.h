#pragma once
// The config's `tls` section for `listen` (docs/SECURITY.md, "Configuration").
// rpc/tls_credentials.h turns it into gRPC's server credentials.

#include <cstdint>
#include <string>

namespace ckpt {

enum class ClientAuth {
  kNone,     // no client certificate asked for
  kRequest,  // asked for, verified when sent, not required (tokens may identify instead)
  kRequire,  // required and verified: mTLS
};
const char* ClientAuthName(ClientAuth mode);

struct TlsSettings {
  bool enabled = false;  // the section is present
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // required unless client_auth is none
  ClientAuth client_auth = ClientAuth::kNone;
  // The files are re-read this often; a swapped certificate serves new connections from then on.
  int64_t refresh_interval_s = 60;
  std::string crl_dir;  // "" = no revocation list; else OpenSSL's hashed CRL files

  bool operator==(const TlsSettings&) const = default;
};

}  // namespace ckpt
