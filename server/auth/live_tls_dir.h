#pragma once
// LiveTlsDir: the copies of the TLS files that gRPC reads (docs/SECURITY.md "Rotation"). The
// daemon checks the operator's files itself (auth/tls_files.h) and writes only a set that passed
// here, so that gRPC's file watcher never reads an empty, half-written or mismatched file:
//
//   <dir>/live -> g<N>                 the set in use (a symlink, swapped with one rename)
//   <dir>/g<N>/cert.pem, key.pem, ca.pem   a set, written whole before the swap, never changed
//   <dir>/crl/<issuer hash>.r<k>       every CRL in use, PEM, one file each
//
// gRPC reads live/key.pem and live/cert.pem one after the other and checks their modification
// times before and after (seconds): every set is written with a time of its own, later than
// the previous set's, so a swap between its two reads is seen and read again, never mixed.
// The set before the one in use is kept (a read that began just before the swap finishes on it).
//
// CRLs: OpenSSL's directory lookup (gRPC's crl_directory) finds them by issuer hash and suffix,
// loads each suffix once and looks for the next one at every handshake. So a CRL the daemon has
// not used yet gets the next free suffix of its issuer and is never rewritten; OpenSSL takes
// the newest CRL of an issuer it holds. The directory starts empty at each daemon start.
//
// Threading: one thread at a time (the reloader's, or the controlling thread before it starts).

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "auth/tls_files.h"
#include "common/status.h"

namespace ckpt {

class LiveTlsDir {
 public:
  // `dir` is made (0700) or emptied; nothing is written yet.
  static Result<LiveTlsDir> Create(const std::string& dir);

  // Writes `material` as the set in use (a new generation, then the swap), and its CRLs not in
  // use yet. An error leaves the previous set in use.
  Status Publish(const TlsMaterial& material);

  // The paths gRPC reads.
  std::string cert_path() const { return dir_ + "/live/cert.pem"; }
  std::string key_path() const { return dir_ + "/live/key.pem"; }
  std::string ca_path() const { return dir_ + "/live/ca.pem"; }
  std::string crl_dir() const { return dir_ + "/crl"; }
  int64_t generation() const { return generation_; }

 private:
  explicit LiveTlsDir(std::string dir) : dir_(std::move(dir)) {}
  Status PublishCrls(const TlsMaterial& material);

  std::string dir_;
  int64_t generation_ = 0;
  int64_t last_mtime_ = 0;                        // of the newest set's files (seconds)
  std::set<std::string> crl_digests_;             // CRLs written to crl/
  std::map<unsigned long, int> next_crl_suffix_;  // per issuer hash
};

}  // namespace ckpt
