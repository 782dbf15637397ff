#pragma once
// The credentials of the gRPC port: plaintext, or TLS from a `tls` section through gRPC's
// file-watching certificate provider, which re-reads the certificate, key and CA every
// refresh_interval_s. A swapped certificate serves new connections from then on; live ones keep
// the session they negotiated.

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "auth/tls_settings.h"
#include "common/status.h"

namespace ckpt {

// Checks the files (auth/tls_files.h) and builds the credentials. INVALID_ARGUMENT naming the
// file when one is unusable.
Result<std::shared_ptr<grpc::ServerCredentials>> MakeListenCredentials(const TlsSettings& tls);

}  // namespace ckpt
