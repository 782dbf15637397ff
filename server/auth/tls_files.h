#pragma once
// Checks the files of a `tls` section before the daemon serves with them: gRPC's file watcher
// only logs a bad file and fails every handshake, which a daemon that starts anyway would hide.

#include "auth/tls_settings.h"
#include "common/status.h"

namespace ckpt {

// OK when the certificate chain, the key and (if set) the client CA are regular, readable PEM
// files, the key belongs to the certificate, and crl_dir (if set) is a directory. Otherwise
// INVALID_ARGUMENT naming the file and what is wrong with it.
Status CheckTlsFiles(const TlsSettings& tls);

}  // namespace ckpt
