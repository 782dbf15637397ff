#pragma once
// What a call's transport says about its caller (auth/access_policy.h's CallerCredentials): the
// client certificate's identity from gRPC's AuthContext, a bearer token from the metadata, TLS or
// not, loopback or not. Read per call: an AuthMetadataProcessor's result would be shared by every
// call of a connection, and one channel may carry calls of several principals.

#include <grpcpp/server_context.h>

#include <string>

#include "auth/access_policy.h"

namespace ckpt {

CallerCredentials CredentialsOf(const grpc::ServerContextBase& context);

// The IP address part of gRPC's peer string ("ipv4:10.0.0.7:5123" -> "10.0.0.7",
// "ipv6:[::1]:5123" -> "::1"); the whole string when it has another form.
std::string PeerAddress(const std::string& grpc_peer);

}  // namespace ckpt
