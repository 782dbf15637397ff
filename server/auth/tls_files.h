#pragma once
// The files of a `tls` section, read and checked before gRPC ever sees them (docs/SECURITY.md
// "TLS files"). gRPC's own file watcher hands whatever it reads to the TLS library: an empty key
// aborts the process, a key that does not match its certificate or a garbage file fails every
// handshake until fixed, and a CRL in DER or a CRL that does not parse is skipped without a
// word. So the daemon reads the files itself, at start and at every refresh, and only a set
// that passed every check reaches gRPC (auth/live_tls_dir.h); a set that fails keeps the last
// good one in use.
//
// Pure: reads files, no gRPC. Threading: any thread.

#include <cstdint>
#include <string>
#include <vector>

#include "auth/tls_settings.h"
#include "common/status.h"

namespace ckpt {

// One certificate revocation list as found in crl_dir (PEM or DER), as PEM.
struct CrlFile {
  std::string source;         // the file it was read from, for messages
  std::string pem;            // one CRL, PEM
  unsigned long issuer_hash;  // OpenSSL's subject-name hash of its issuer (`openssl crl -hash`)
  std::string digest;         // SHA-256 of its DER, hex: tells a new CRL from one already used
};

// Everything a `tls` section names, read and checked.
struct TlsMaterial {
  std::string cert_chain_pem;
  std::string key_pem;
  std::string client_ca_pem;  // "" without client_ca_file
  std::vector<CrlFile> crls;  // every CRL of crl_dir, in file name order
  // Warnings that do not refuse the set (a CA without a CRL in crl_dir: its certificates are
  // not checked for revocation), one line each.
  std::vector<std::string> warnings;

  bool SameIdentity(const TlsMaterial& other) const {
    return cert_chain_pem == other.cert_chain_pem && key_pem == other.key_pem &&
           client_ca_pem == other.client_ca_pem;
  }
};

// Limits on what is read: no certificate file, key or CRL comes near these; /dev/zero or a huge
// file must not be read, nor a directory of millions of files.
inline constexpr int64_t kMaxTlsFileBytes = 1 << 20;
inline constexpr size_t kMaxCrlFiles = 1000;

// Reads the certificate chain, the key and (if set) the client CA and every CRL of crl_dir.
// INVALID_ARGUMENT naming the file and what is wrong: not a regular file, empty, larger than
// 1 MiB, not PEM, holding no certificate or key (encrypted keys are not supported), a key that
// is not the certificate's, a certificate not yet valid or expired, a CRL that is neither PEM
// nor DER. `now_s`: the time certificates are judged at (seconds since the epoch; 0: now).
Result<TlsMaterial> ReadTlsMaterial(const TlsSettings& tls, int64_t now_s = 0);

// The start's and --check-config's check: ReadTlsMaterial's status.
Status CheckTlsFiles(const TlsSettings& tls);

}  // namespace ckpt
