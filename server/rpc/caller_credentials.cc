#include "rpc/caller_credentials.h"

#include <grpc/grpc_security_constants.h>
#include <strings.h>

#include "common/host_port.h"

namespace ckpt {
namespace {

std::string FirstValue(const grpc::AuthContext& auth, const char* property) {
  for (const auto& value : auth.FindPropertyValues(property)) {
    return std::string(value.data(), value.size());
  }
  return {};
}

std::vector<std::string> AllValues(const grpc::AuthContext& auth, const char* property) {
  std::vector<std::string> values;
  for (const auto& value : auth.FindPropertyValues(property)) {
    values.emplace_back(value.data(), value.size());
  }
  return values;
}

// The order of docs/SECURITY.md, "Identities": SPIFFE id, URI SAN, DNS SAN, CN. gRPC sets the
// SPIFFE id only for a certificate with exactly one URI SAN, and a spiffe:// one; a certificate
// with several SPIFFE URIs is ambiguous, so its spiffe:// URIs never stand in for the id.
std::string CertIdentity(const grpc::AuthContext& auth) {
  if (std::string id = FirstValue(auth, GRPC_PEER_SPIFFE_ID_PROPERTY_NAME); !id.empty()) return id;
  for (const auto& value : auth.FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
    const std::string uri(value.data(), value.size());
    if (!uri.empty() && uri.rfind("spiffe://", 0) != 0) return uri;
  }
  for (const char* property : {GRPC_PEER_DNS_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
    if (std::string value = FirstValue(auth, property); !value.empty()) return value;
  }
  return {};
}

}  // namespace

std::string PeerAddress(const std::string& grpc_peer) {
  std::string rest;
  if (grpc_peer.rfind("ipv4:", 0) == 0) {
    rest = grpc_peer.substr(5);
    const size_t colon = rest.rfind(':');
    return colon == std::string::npos ? rest : rest.substr(0, colon);
  }
  if (grpc_peer.rfind("ipv6:", 0) == 0) {
    rest = grpc_peer.substr(5);
    // "[::1]:5123", percent-encoded in some builds ("%5B::1%5D:5123").
    const size_t open = rest.find('[') != std::string::npos ? rest.find('[') + 1
                        : rest.rfind("%5B", 0) == 0         ? 3
                                                            : std::string::npos;
    const size_t close = rest.find(']') != std::string::npos ? rest.find(']') : rest.find("%5D");
    if (open != std::string::npos && close != std::string::npos && close > open) {
      return rest.substr(open, close - open);
    }
    return rest;
  }
  return grpc_peer;
}

CallerCredentials CredentialsOf(const grpc::ServerContextBase& context) {
  CallerCredentials credentials;
  if (auto auth = context.auth_context()) {
    // "ssl" from SslServerCredentials, "tls" from the TlsServerCredentials the daemon uses.
    const std::string transport = FirstValue(*auth, GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
    credentials.secure_channel =
        transport == GRPC_SSL_TRANSPORT_SECURITY_TYPE || transport == "tls";
    // Set only from a client certificate the handshake verified against client_ca_file.
    if (credentials.secure_channel && auth->IsPeerAuthenticated()) {
      credentials.cert_identity = CertIdentity(*auth);
      credentials.cert.spiffe_id = FirstValue(*auth, GRPC_PEER_SPIFFE_ID_PROPERTY_NAME);
      credentials.cert.uris = AllValues(*auth, GRPC_PEER_URI_PROPERTY_NAME);
      credentials.cert.dns = AllValues(*auth, GRPC_PEER_DNS_PROPERTY_NAME);
      credentials.cert.cn = FirstValue(*auth, GRPC_X509_CN_PROPERTY_NAME);
    }
  }
  const auto& metadata = context.client_metadata();
  credentials.authorization_headers = static_cast<int>(metadata.count("authorization"));
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    const std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "bearer ";
    credentials.has_token = true;
    if (value.size() > kBearer.size() &&
        ::strncasecmp(value.data(), kBearer.data(), kBearer.size()) == 0) {
      credentials.token = std::string(value.substr(kBearer.size()));
    }
  }
  credentials.loopback_peer = IsLoopbackHost(PeerAddress(context.peer()));
  return credentials;
}

}  // namespace ckpt
