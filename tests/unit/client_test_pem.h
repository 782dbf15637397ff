#pragma once
// Certificates and keys made on the spot for the clients' unit tests (OpenSSL, EC P-256: a few
// milliseconds each), so that no test depends on PEM files checked in with an expiry date.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace ckpt::client_test {

struct TestKeyPair {
  std::string cert_pem;           // self-signed
  std::string key_pem;            // PKCS#8, unencrypted
  std::string encrypted_key_pem;  // the same key under the passphrase "secret"
};

// A self-signed certificate for `common_name`, valid from now + not_before to now + not_after.
inline TestKeyPair MakeTestKeyPair(const std::string& common_name,
                                   std::chrono::seconds not_before = std::chrono::hours(-1),
                                   std::chrono::seconds not_after = std::chrono::hours(24)) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), &X509_free);
  if (!key || !cert) throw std::runtime_error("OpenSSL could not make a key");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(not_before.count()));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(not_after.count()));
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    throw std::runtime_error("OpenSSL could not sign a certificate");
  }
  const auto to_text = [](auto write) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    write(bio.get());
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(size));
  };
  TestKeyPair pair;
  pair.cert_pem = to_text([&](BIO* bio) { PEM_write_bio_X509(bio, cert.get()); });
  pair.key_pem = to_text([&](BIO* bio) {
    PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  pair.encrypted_key_pem = to_text([&](BIO* bio) {
    char passphrase[] = "secret";
    PEM_write_bio_PKCS8PrivateKey(bio, key.get(), EVP_aes_256_cbc(), passphrase,
                                  sizeof passphrase - 1, nullptr, nullptr);
  });
  return pair;
}

}  // namespace ckpt::client_test
