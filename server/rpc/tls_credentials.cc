#include "rpc/tls_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "auth/tls_files.h"

namespace ckpt {
namespace {

grpc_ssl_client_certificate_request_type CertRequestType(ClientAuth mode) {
  switch (mode) {
    case ClientAuth::kNone: return GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
    case ClientAuth::kRequest: return GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
    case ClientAuth::kRequire: return GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
}

}  // namespace

Result<std::shared_ptr<grpc::ServerCredentials>> MakeListenCredentials(const TlsSettings& tls) {
  if (!tls.enabled) return grpc::InsecureServerCredentials();
  if (Status s = CheckTlsFiles(tls); !s.ok()) return s;
  const auto refresh = static_cast<unsigned int>(tls.refresh_interval_s);
  const bool with_ca = !tls.client_ca_file.empty();
  auto provider = with_ca ? std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                                tls.key_file, tls.cert_file, tls.client_ca_file, refresh)
                          : std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                                tls.key_file, tls.cert_file, refresh);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (with_ca) options.watch_root_certs();
  options.set_cert_request_type(CertRequestType(tls.client_auth));
  if (!tls.crl_dir.empty()) options.set_crl_directory(tls.crl_dir);
  auto credentials = grpc::experimental::TlsServerCredentials(options);
  if (!credentials) return Status::InvalidArgument("tls: gRPC refused the TLS settings");
  return credentials;
}

}  // namespace ckpt
