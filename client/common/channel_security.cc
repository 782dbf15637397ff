#include "common/channel_security.h"

#include "common/bearer_token.h"

namespace ckpt::cli {

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const ChannelSecurity& security) {
  if (!security.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = security.ca_pem;  // empty: gRPC's default roots (the system's)
  ssl.pem_cert_chain = security.cert_pem;
  ssl.pem_private_key = security.key_pem;
  return grpc::SslCredentials(ssl);
}

std::shared_ptr<grpc::Channel> CreateSecuredChannel(const std::string& target,
                                                    const ChannelSecurity& security,
                                                    grpc::ChannelArguments args) {
  if (security.tls && !security.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(security.tls_server_name);  // GRPC_SSL_TARGET_NAME_OVERRIDE_ARG
  }
  return grpc::CreateCustomChannel(target, MakeChannelCredentials(security), args);
}

void AttachBearerToken(const std::string& token, grpc::ClientContext* context) {
  if (token.empty()) return;
  context->AddMetadata(kAuthorizationMetadataKey, BearerMetadataValue(token));
}

}  // namespace ckpt::cli
