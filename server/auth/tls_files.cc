#include "auth/tls_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>

namespace ckpt {
namespace {

// Never prompts: an encrypted key fails to load instead of OpenSSL's default callback reading the
// terminal (which would hang a daemon started from one, or its refresh thread).
int NoPassphrase(char*, int, int, void*) { return 0; }

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CrlFree {
  void operator()(X509_CRL* crl) const { X509_CRL_free(crl); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Crl = std::unique_ptr<X509_CRL, CrlFree>;

Bio ReadBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// OpenSSL's error queue is cleared after every parse: what failed is said in our own words, and
// nothing of it must leak into gRPC's later use of the library on this thread.
struct ClearErrors {
  ~ClearErrors() { ERR_clear_error(); }
};

// The whole of a regular file of at most kMaxTlsFileBytes; `what` names it in errors.
Result<std::string> ReadSmallFile(const std::string& path, const std::string& what) {
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
  if (st.st_size > kMaxTlsFileBytes) return Status::InvalidArgument(what + ": larger than 1 MiB");
  if (st.st_size == 0) return Status::InvalidArgument(what + ": empty");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::InvalidArgument(what + ": read error: " + std::strerror(errno));
    if (n == 0) break;  // shorter than when it was looked at: a file being written
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  if (text.empty()) return Status::InvalidArgument(what + ": empty");
  return text;
}

Result<std::string> ReadPem(const std::string& path, const std::string& what) {
  auto text = ReadSmallFile(path, what);
  if (!text.ok()) return text;
  if (text->find("-----BEGIN ") == std::string::npos) {
    return Status::InvalidArgument(what + ": not a PEM file (no -----BEGIN line)");
  }
  return text;
}

// Every certificate of a PEM text, in order; none when one does not parse.
std::vector<Cert> ParseCertificates(const std::string& pem) {
  ClearErrors clear;
  std::vector<Cert> certs;
  Bio bio = ReadBio(pem);
  while (true) {
    Cert cert(PEM_read_bio_X509(bio.get(), nullptr, &NoPassphrase, nullptr));
    if (!cert) break;
    certs.push_back(std::move(cert));
  }
  // The loop ends at the end of the text (no start line) or at a block that does not parse.
  const unsigned long error = ERR_peek_last_error();
  if (error != 0 && ERR_GET_REASON(error) != PEM_R_NO_START_LINE) certs.clear();
  return certs;
}

std::string Describe(const ASN1_TIME* time) {
  Bio bio(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(bio.get(), time);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(std::max(0L, n)));
}

// "" when `cert` is valid at `now`; else why not.
std::string CheckValidity(X509* cert, time_t now) {
  if (X509_cmp_time(X509_get0_notBefore(cert), &now) > 0) {
    return "is not valid before " + Describe(X509_get0_notBefore(cert));
  }
  if (X509_cmp_time(X509_get0_notAfter(cert), &now) < 0) {
    return "expired on " + Describe(X509_get0_notAfter(cert));
  }
  return "";
}

std::string Hex(const unsigned char* data, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += kHex[data[i] >> 4];
    out += kHex[data[i] & 15];
  }
  return out;
}

// `crl` as a CrlFile read from `source`.
Result<CrlFile> ToCrlFile(X509_CRL* crl, const std::string& source) {
  CrlFile file;
  file.source = source;
  Bio out(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509_CRL(out.get(), crl)) {
    return Status::InvalidArgument(source + ": the CRL cannot be written back as PEM");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  file.pem.assign(data, static_cast<size_t>(std::max(0L, n)));
  file.issuer_hash = X509_NAME_hash_ex(X509_CRL_get_issuer(crl), nullptr, nullptr, nullptr);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!X509_CRL_digest(crl, EVP_sha256(), digest, &size)) {
    return Status::InvalidArgument(source + ": the CRL cannot be digested");
  }
  file.digest = Hex(digest, size);
  return file;
}

// Every CRL of one file: PEM (one or more) or DER (one).
Status ReadCrlFile(const std::string& path, std::vector<CrlFile>* crls) {
  const std::string what = "tls.crl_dir file " + path;
  auto text = ReadSmallFile(path, what);
  if (!text.ok()) return text.status();
  ClearErrors clear;
  const size_t before = crls->size();
  if (text->find("-----BEGIN X509 CRL-----") != std::string::npos) {
    Bio bio = ReadBio(*text);
    while (true) {
      Crl crl(PEM_read_bio_X509_CRL(bio.get(), nullptr, &NoPassphrase, nullptr));
      if (!crl) break;
      auto file = ToCrlFile(crl.get(), path);
      if (!file.ok()) return file.status();
      crls->push_back(std::move(*file));
    }
    const unsigned long error = ERR_peek_last_error();
    if (crls->size() == before || (error != 0 && ERR_GET_REASON(error) != PEM_R_NO_START_LINE)) {
      crls->resize(before);
      return Status::InvalidArgument(what + ": a PEM CRL that does not parse");
    }
    return Status::Ok();
  }
  const auto* der = reinterpret_cast<const unsigned char*>(text->data());
  Crl crl(d2i_X509_CRL(nullptr, &der, static_cast<long>(text->size())));
  if (!crl || der != reinterpret_cast<const unsigned char*>(text->data()) + text->size()) {
    return Status::InvalidArgument(what + ": neither a PEM nor a DER certificate revocation list");
  }
  auto file = ToCrlFile(crl.get(), path);
  if (!file.ok()) return file.status();
  crls->push_back(std::move(*file));
  return Status::Ok();
}

Status ReadCrlDir(const std::string& dir, std::vector<CrlFile>* crls) {
  std::unique_ptr<DIR, int (*)(DIR*)> handle(::opendir(dir.c_str()), &::closedir);
  if (!handle) {
    return Status::InvalidArgument("tls.crl_dir " + dir +
                                   ": not a readable directory: " + std::strerror(errno));
  }
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(handle.get())) {
    const std::string name = entry->d_name;
    if (name.empty() || name[0] == '.') continue;  // ., .., and files being written by editors
    if (names.size() >= kMaxCrlFiles) {
      return Status::InvalidArgument("tls.crl_dir " + dir + ": more than " +
                                     std::to_string(kMaxCrlFiles) + " files");
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    if (Status s = ReadCrlFile(path, crls); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<TlsMaterial> ReadTlsMaterial(const TlsSettings& tls, int64_t now_s) {
  const time_t now = now_s > 0 ? static_cast<time_t>(now_s) : std::time(nullptr);
  TlsMaterial material;
  auto cert_pem = ReadPem(tls.cert_file, "tls.cert_file " + tls.cert_file);
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPem(tls.key_file, "tls.key_file " + tls.key_file);
  if (!key_pem.ok()) return key_pem.status();
  std::vector<Cert> chain = ParseCertificates(*cert_pem);
  if (chain.empty()) {
    return Status::InvalidArgument("tls.cert_file " + tls.cert_file +
                                   ": holds no readable certificate");
  }
  Key key;
  {
    ClearErrors clear;
    key.reset(PEM_read_bio_PrivateKey(ReadBio(*key_pem).get(), nullptr, &NoPassphrase, nullptr));
  }
  if (!key) {
    return Status::InvalidArgument("tls.key_file " + tls.key_file +
                                   ": holds no readable private key (encrypted keys are not "
                                   "supported)");
  }
  {
    ClearErrors clear;
    if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
      return Status::InvalidArgument("tls.key_file " + tls.key_file +
                                     ": is not the key of the certificate in " + tls.cert_file);
    }
  }
  if (std::string why = CheckValidity(chain.front().get(), now); !why.empty()) {
    return Status::InvalidArgument("tls.cert_file " + tls.cert_file + ": the certificate " + why);
  }
  material.cert_chain_pem = std::move(*cert_pem);
  material.key_pem = std::move(*key_pem);
  std::vector<Cert> cas;
  if (!tls.client_ca_file.empty()) {
    auto ca_pem = ReadPem(tls.client_ca_file, "tls.client_ca_file " + tls.client_ca_file);
    if (!ca_pem.ok()) return ca_pem.status();
    cas = ParseCertificates(*ca_pem);
    if (cas.empty()) {
      return Status::InvalidArgument("tls.client_ca_file " + tls.client_ca_file +
                                     ": holds no readable certificate");
    }
    material.client_ca_pem = std::move(*ca_pem);
  }
  if (!tls.crl_dir.empty()) {
    if (Status s = ReadCrlDir(tls.crl_dir, &material.crls); !s.ok()) return s;
    // gRPC checks revocation only for issuers it finds a CRL of: say which CA goes unchecked.
    for (const Cert& ca : cas) {
      const unsigned long hash =
          X509_NAME_hash_ex(X509_get_subject_name(ca.get()), nullptr, nullptr, nullptr);
      const bool covered = std::any_of(material.crls.begin(), material.crls.end(),
                                       [hash](const CrlFile& c) { return c.issuer_hash == hash; });
      if (!covered) {
        char name[256];
        X509_NAME_oneline(X509_get_subject_name(ca.get()), name, sizeof name);
        material.warnings.push_back("tls.crl_dir " + tls.crl_dir + " holds no CRL of the CA " +
                                    name + ": its certificates are not checked for revocation");
      }
    }
  }
  return material;
}

Status CheckTlsFiles(const TlsSettings& tls) {
  if (!tls.enabled) return Status::Ok();
  auto material = ReadTlsMaterial(tls);
  return material.ok() ? Status::Ok() : material.status();
}

}  // namespace ckpt
