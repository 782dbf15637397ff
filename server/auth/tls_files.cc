#include "auth/tls_files.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

namespace ckpt {
namespace {

// No PEM file of a certificate chain comes near this; /dev/zero or a huge file must not be read.
constexpr off_t kMaxPemBytes = 1 << 20;

// The file's text, or an error naming `key` and the path.
Result<std::string> ReadPem(const std::string& path, const char* key) {
  const std::string what = std::string("tls.") + key + " " + path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::InvalidArgument(what + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(what + ": not a regular file");
  }
  if (st.st_size > kMaxPemBytes) return Status::InvalidArgument(what + ": larger than 1 MiB");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::InvalidArgument(what + ": read error");
    got += static_cast<size_t>(n);
  }
  if (text.find("-----BEGIN ") == std::string::npos) {
    return Status::InvalidArgument(what + ": not a PEM file (no -----BEGIN line)");
  }
  return text;
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

std::unique_ptr<BIO, BioFree> Bio(const std::string& text) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

}  // namespace

Status CheckTlsFiles(const TlsSettings& tls) {
  auto cert_pem = ReadPem(tls.cert_file, "cert_file");
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPem(tls.key_file, "key_file");
  if (!key_pem.ok()) return key_pem.status();
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_bio_X509(Bio(*cert_pem).get(), nullptr, nullptr, nullptr));
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(Bio(*key_pem).get(), nullptr, nullptr, nullptr));
  ERR_clear_error();  // what failed is said below; OpenSSL's queue must not leak into gRPC's
  if (!cert) {
    return Status::InvalidArgument("tls.cert_file " + tls.cert_file +
                                   ": holds no readable certificate");
  }
  if (!key) {
    return Status::InvalidArgument("tls.key_file " + tls.key_file +
                                   ": holds no readable private key (encrypted keys are not "
                                   "supported)");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("tls.key_file " + tls.key_file +
                                   ": is not the key of the certificate in " + tls.cert_file);
  }
  if (!tls.client_ca_file.empty()) {
    auto ca_pem = ReadPem(tls.client_ca_file, "client_ca_file");
    if (!ca_pem.ok()) return ca_pem.status();
    std::unique_ptr<X509, X509Free> ca(
        PEM_read_bio_X509(Bio(*ca_pem).get(), nullptr, nullptr, nullptr));
    ERR_clear_error();
    if (!ca) {
      return Status::InvalidArgument("tls.client_ca_file " + tls.client_ca_file +
                                     ": holds no readable certificate");
    }
  }
  if (!tls.crl_dir.empty()) {
    struct stat st {};
    if (::stat(tls.crl_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("tls.crl_dir " + tls.crl_dir + ": not a directory");
    }
  }
  return Status::Ok();
}

}  // namespace ckpt
