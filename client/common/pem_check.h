#pragma once
// Checks of the PEM files a TLS client is given, made before any connection: gRPC reports a bad
// root bundle or a key that does not belong to its certificate only as "empty address list" at the
// first call, and a client certificate the daemon refuses (expired) only as "Socket closed".
//
// Each returns "" when the text is fine, else one line starting "<option> <path>: ".

#include <string>
#include <string_view>

namespace ckpt::cli {

// At least one certificate, and every PEM block in it a certificate that parses.
std::string CheckCaPem(std::string_view pem, const std::string& option, const std::string& path);

// A certificate chain that parses, whose first certificate (the client's own) is valid now.
std::string CheckCertificatePem(std::string_view pem, const std::string& option,
                                const std::string& path);

// An unencrypted private key (gRPC has no way to ask for a passphrase).
std::string CheckPrivateKeyPem(std::string_view pem, const std::string& option,
                               const std::string& path);

// The key is the private half of the chain's first certificate. Both must have passed the checks
// above. The error names both options.
std::string CheckKeyMatchesCertificate(std::string_view cert_pem, std::string_view key_pem,
                                       const std::string& cert_option,
                                       const std::string& key_option);

}  // namespace ckpt::cli
