#include "rpc/tls_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "core/printable.h"

namespace ckpt {
namespace {

grpc_ssl_client_certificate_request_type CertRequestType(ClientAuth mode) {
  switch (mode) {
    case ClientAuth::kNone: return GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
    case ClientAuth::kRequest: return GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
    case ClientAuth::kRequire: return GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
}

// What the operator's files look like now (inode, size, time): a refusal is said again only
// once they changed.
std::string FilesFingerprint(const TlsSettings& tls) {
  std::string out;
  for (const std::string* path :
       {&tls.cert_file, &tls.key_file, &tls.client_ca_file, &tls.crl_dir}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) {
      out += "-;";
      continue;
    }
    out += std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return out;
}

bool SameCrls(const TlsMaterial& a, const TlsMaterial& b) {
  if (a.crls.size() != b.crls.size()) return false;
  for (size_t i = 0; i < a.crls.size(); ++i) {
    if (a.crls[i].digest != b.crls[i].digest) return false;
  }
  return true;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

}  // namespace

TlsReloader::TlsReloader(TlsSettings tls, LiveTlsDir live, TlsMaterial in_use,
                         std::atomic<uint64_t>& failures)
    : tls_(std::move(tls)),
      failures_(failures),
      live_(std::move(live)),
      in_use_(std::move(in_use)) {
  MutexLock lock(mu_);  // orders the members' initialisation before the thread's first lock
  last_warnings_ = Joined(in_use_.warnings);
}

TlsReloader::~TlsReloader() { Stop(); }

void TlsReloader::Start() {
  thread_ = std::thread([this] { Run(); });
}

void TlsReloader::Stop() {
  {
    MutexLock lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

int64_t TlsReloader::generation() const {
  MutexLock lock(mu_);
  return live_.generation();
}

void TlsReloader::Run() {
  const auto every = std::chrono::seconds(std::max<int64_t>(1, tls_.refresh_interval_s));
  while (true) {
    {
      MutexLock lock(stop_mu_);
      stop_cv_.WaitFor(lock, every, [this]() CKPT_REQUIRES(stop_mu_) { return stopping_; });
      if (stopping_) return;
    }
    RefreshNow();
  }
}

void TlsReloader::RefreshNow() {
  MutexLock lock(mu_);
  auto read = ReadTlsMaterial(tls_);
  if (!read.ok()) {
    // Refused: the set in use stays. Said (and counted) once per state of the files, not at
    // every refresh while an operator is still at work on them.
    const std::string refusal = read.status().message() + "|" + FilesFingerprint(tls_);
    if (refusal != last_refusal_) {
      last_refusal_ = refusal;
      failures_.fetch_add(1, std::memory_order_relaxed);
      spdlog::error(
          "tls: {}; refused, the certificate set in use stays (fix or replace the file: "
          "it is read again every {} s)",
          Printable(read.status().message()), tls_.refresh_interval_s);
    }
    return;
  }
  if (!last_refusal_.empty()) {
    spdlog::info("tls: the files load again");
    last_refusal_.clear();
  }
  if (const std::string warnings = Joined(read->warnings); warnings != last_warnings_) {
    last_warnings_ = warnings;
    for (const auto& warning : read->warnings) spdlog::warn("tls: {}", Printable(warning));
  }
  if (read->SameIdentity(in_use_) && SameCrls(*read, in_use_)) return;
  if (Status s = live_.Publish(*read); !s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("tls: cannot write the new set for gRPC ({}); the set in use stays",
                  s.ToString());
    return;
  }
  const bool identity = !read->SameIdentity(in_use_);
  in_use_ = std::move(*read);
  spdlog::info("tls: {} from {}{}; new connections use it",
               identity ? "new certificate set" : "new CRLs",
               Printable(identity ? tls_.cert_file : tls_.crl_dir),
               in_use_.crls.empty() ? "" : " (" + std::to_string(in_use_.crls.size()) + " CRL(s))");
}

Result<ListenCredentials> MakeListenCredentials(const TlsSettings& tls, const std::string& live_dir,
                                                std::atomic<uint64_t>& reload_failures) {
  ListenCredentials out;
  if (!tls.enabled) {
    out.credentials = grpc::InsecureServerCredentials();
    return out;
  }
  auto material = ReadTlsMaterial(tls);
  if (!material.ok()) return material.status();
  for (const auto& warning : material->warnings) spdlog::warn("tls: {}", Printable(warning));
  auto live = LiveTlsDir::Create(live_dir);
  if (!live.ok()) return live.status();
  if (Status s = live->Publish(*material); !s.ok()) return s;
  // gRPC reads the copies at least once a second: a set the reloader published is in use
  // within a second of it, whatever refresh_interval_s says of the operator's files.
  constexpr unsigned int kCopiesReadEvery = 1;
  const bool with_ca = !tls.client_ca_file.empty();
  auto provider = with_ca
                      ? std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                            live->key_path(), live->cert_path(), live->ca_path(), kCopiesReadEvery)
                      : std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
                            live->key_path(), live->cert_path(), kCopiesReadEvery);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (with_ca) options.watch_root_certs();
  options.set_cert_request_type(CertRequestType(tls.client_auth));
  if (!tls.crl_dir.empty()) options.set_crl_directory(live->crl_dir());
  out.credentials = grpc::experimental::TlsServerCredentials(options);
  if (!out.credentials) return Status::InvalidArgument("tls: gRPC refused the TLS settings");
  out.reloader =
      std::make_unique<TlsReloader>(tls, std::move(*live), std::move(*material), reload_failures);
  return out;
}

}  // namespace ckpt
