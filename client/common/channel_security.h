#pragma once
// A client's channel to ckptd secured as security_options.h describes: TLS credentials and the
// bearer token. Used by ckptctl, ckpt-worker-sim, the worker SDK and ckpt-hostile alike.
//
// The token goes on each call's ClientContext, not in CallCredentials: gRPC refuses call
// credentials on a plaintext channel, and the daemon accepts a token over plaintext from loopback.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/security_options.h"

namespace ckpt::cli {

// TLS credentials (grpc::SslCredentials with the PEMs; gRPC's default roots without a CA) when
// security.tls, else insecure ones.
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const ChannelSecurity& security);

// A channel to `target` with MakeChannelCredentials and `args`, plus the TLS name override
// (GRPC_SSL_TARGET_NAME_OVERRIDE_ARG) when security.tls_server_name is set.
std::shared_ptr<grpc::Channel> CreateSecuredChannel(const std::string& target,
                                                    const ChannelSecurity& security,
                                                    grpc::ChannelArguments args);

// Adds `authorization: Bearer <token>` to a call not yet started; nothing for an empty token.
void AttachBearerToken(const std::string& token, grpc::ClientContext* context);

}  // namespace ckpt::cli
