#include "common/pem_check.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>
#include <vector>

namespace ckpt::cli {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr MemoryBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Never prompts: a key with a passphrase fails to load instead of reading the terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

// Every certificate of `pem`, in order; *broken when a PEM block after them did not parse as one
// (the end of the text is not an error).
std::vector<X509Ptr> ReadCertificates(std::string_view pem, bool* broken) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemoryBio(pem);
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, &NoPassphrase, nullptr)) {
    certs.emplace_back(cert);
  }
  const unsigned long error = ERR_peek_last_error();
  *broken = error != 0 &&
            !(ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE);
  ERR_clear_error();
  return certs;
}

KeyPtr ReadPrivateKey(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, &NoPassphrase, nullptr));
  ERR_clear_error();
  return key;
}

std::string Utc(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return "?";
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string Prefix(const std::string& option, const std::string& path) {
  return option + " " + path + ": ";
}

}  // namespace

std::string CheckCaPem(std::string_view pem, const std::string& option, const std::string& path) {
  bool broken = false;
  const std::vector<X509Ptr> certs = ReadCertificates(pem, &broken);
  if (broken) return Prefix(option, path) + "a certificate in it does not parse";
  if (certs.empty()) {
    return Prefix(option, path) + "holds no PEM certificate (-----BEGIN CERTIFICATE-----)";
  }
  return "";
}

std::string CheckCertificatePem(std::string_view pem, const std::string& option,
                                const std::string& path) {
  bool broken = false;
  const std::vector<X509Ptr> certs = ReadCertificates(pem, &broken);
  if (broken) return Prefix(option, path) + "a certificate in it does not parse";
  if (certs.empty()) {
    return Prefix(option, path) + "holds no PEM certificate (-----BEGIN CERTIFICATE-----)";
  }
  const X509* own = certs.front().get();
  // The daemon would refuse it during the handshake, and the client would only see the connection
  // closed.
  if (X509_cmp_current_time(X509_get0_notAfter(own)) < 0) {
    return Prefix(option, path) + "the certificate expired on " + Utc(X509_get0_notAfter(own));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(own)) > 0) {
    return Prefix(option, path) + "the certificate is not valid before " +
           Utc(X509_get0_notBefore(own));
  }
  return "";
}

std::string CheckPrivateKeyPem(std::string_view pem, const std::string& option,
                               const std::string& path) {
  if (ReadPrivateKey(pem)) return "";
  if (pem.find("ENCRYPTED") != std::string_view::npos) {
    return Prefix(option, path) + "the key is encrypted; the client needs it without a passphrase";
  }
  return Prefix(option, path) + "holds no PEM private key (-----BEGIN PRIVATE KEY-----)";
}

std::string CheckKeyMatchesCertificate(std::string_view cert_pem, std::string_view key_pem,
                                       const std::string& cert_option,
                                       const std::string& key_option) {
  bool broken = false;
  const std::vector<X509Ptr> certs = ReadCertificates(cert_pem, &broken);
  const KeyPtr key = ReadPrivateKey(key_pem);
  const bool match =
      !certs.empty() && key && X509_check_private_key(certs.front().get(), key.get());
  ERR_clear_error();
  if (match) return "";
  return key_option + " does not hold the private key of the certificate in " + cert_option;
}

}  // namespace ckpt::cli
