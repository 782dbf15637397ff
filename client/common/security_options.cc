#include "common/security_options.h"

#include "common/bearer_token.h"
#include "common/credential_file.h"
#include "common/loopback_target.h"
#include "common/pem_check.h"

namespace ckpt::cli {
namespace {

// Reads `path` (if given) into *pem and checks it with `check`; false with *error set.
template <typename Check>
bool LoadPem(const char* option, const std::string& path, Check check, std::string* pem,
             std::string* error) {
  if (path.empty()) return true;
  std::optional<std::string> text = ReadCredentialFile(option, path, error);
  if (!text) return false;
  if (std::string why = check(*text, option, path); !why.empty()) {
    *error = std::move(why);
    return false;
  }
  *pem = std::move(*text);
  return true;
}

}  // namespace

std::optional<ChannelSecurity> LoadChannelSecurity(const SecurityOptions& options,
                                                   const SecurityOptionNames& names,
                                                   std::string* error) {
  std::string ignored;
  if (!error) error = &ignored;
  // Said before any file is read: the fix is in the command line, whatever the files hold.
  if (options.cert_file.empty() != options.key_file.empty()) {
    *error = options.cert_file.empty() ? std::string(names.key_file) + " needs " + names.cert_file +
                                             " (the certificate of that key)"
                                       : std::string(names.cert_file) + " needs " + names.key_file +
                                             " (the private key of that certificate)";
    return std::nullopt;
  }
  if (!options.tls_server_name.empty() && !options.tls()) {
    *error = std::string(names.tls_server_name) + " needs TLS: give " + names.ca_file + " (or " +
             names.cert_file + " and " + names.key_file + ")";
    return std::nullopt;
  }
  ChannelSecurity security;
  security.tls = options.tls();
  security.tls_server_name = options.tls_server_name;
  if (!LoadPem(names.ca_file, options.ca_file, CheckCaPem, &security.ca_pem, error) ||
      !LoadPem(names.cert_file, options.cert_file, CheckCertificatePem, &security.cert_pem,
               error) ||
      !LoadPem(names.key_file, options.key_file, CheckPrivateKeyPem, &security.key_pem, error)) {
    return std::nullopt;
  }
  if (!security.cert_pem.empty()) {
    if (std::string why = CheckKeyMatchesCertificate(security.cert_pem, security.key_pem,
                                                     names.cert_file, names.key_file);
        !why.empty()) {
      *error = std::move(why);
      return std::nullopt;
    }
  }
  if (!options.token_file.empty()) {
    std::optional<std::string> token =
        ReadBearerTokenFile(names.token_file, options.token_file, error);
    if (!token) return std::nullopt;
    security.token = std::move(*token);
  }
  return security;
}

std::string CheckTokenTransport(const std::string& target, const ChannelSecurity& security,
                                const SecurityOptionNames& names) {
  if (security.token.empty() || security.tls || IsLoopbackTarget(target)) return "";
  return std::string(names.token_file) +
         ": a token goes in clear text only to a loopback address, not to " + target + "; give " +
         names.ca_file + " to connect with TLS";
}

}  // namespace ckpt::cli
