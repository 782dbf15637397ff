#include "auth/live_tls_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace ckpt {
namespace {

namespace fs = std::filesystem;

Status Errno(const std::string& what) {
  return Status::Unavailable(what + ": " + std::strerror(errno));
}

// Writes `text` to a new file `path` (never through a symlink, never over a file), with the
// modification time `mtime_s`.
Status WriteNew(const std::string& path, const std::string& text, int64_t mtime_s) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create " + path);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Status s = Errno("cannot write " + path);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  const timespec times[2] = {{static_cast<time_t>(mtime_s), 0}, {static_cast<time_t>(mtime_s), 0}};
  if (::futimens(fd, times) != 0) {
    const Status s = Errno("cannot set the time of " + path);
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return Errno("cannot close " + path);
  return Status::Ok();
}

std::string GenerationName(int64_t generation) {
  char name[32];
  std::snprintf(name, sizeof name, "g%08lld", static_cast<long long>(generation));
  return name;
}

}  // namespace

Result<LiveTlsDir> LiveTlsDir::Create(const std::string& dir) {
  std::error_code ec;
  const auto status = fs::symlink_status(dir, ec);
  if (!ec && fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return Status::InvalidArgument(dir +
                                     " exists and is not a directory (the daemon keeps its "
                                     "copies of the TLS files there)");
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove_all(entry.path(), ec);
    if (ec) return Status::Unavailable("cannot empty " + dir + ": " + ec.message());
  } else if (::mkdir(dir.c_str(), 0700) != 0) {
    return Errno("cannot create " + dir);
  }
  ::chmod(dir.c_str(), 0700);  // private keys are copied here
  if (::mkdir((dir + "/crl").c_str(), 0700) != 0) return Errno("cannot create " + dir + "/crl");
  return LiveTlsDir(dir);
}

Status LiveTlsDir::Publish(const TlsMaterial& material) {
  const int64_t generation = generation_ + 1;
  const std::string name = GenerationName(generation);
  const std::string path = dir_ + "/" + name;
  // A time of its own, later than the previous set's (see the header).
  const int64_t mtime = std::max<int64_t>(std::time(nullptr), last_mtime_ + 1);
  std::error_code ec;
  fs::remove_all(path, ec);  // left by a Publish that failed half-way
  if (::mkdir(path.c_str(), 0700) != 0) return Errno("cannot create " + path);
  Status s = WriteNew(path + "/key.pem", material.key_pem, mtime);
  if (s.ok()) s = WriteNew(path + "/cert.pem", material.cert_chain_pem, mtime);
  if (s.ok() && !material.client_ca_pem.empty()) {
    s = WriteNew(path + "/ca.pem", material.client_ca_pem, mtime);
  }
  if (s.ok()) s = PublishCrls(material);
  if (!s.ok()) {
    fs::remove_all(path, ec);
    return s;
  }
  const std::string link = dir_ + "/live.next";
  ::unlink(link.c_str());
  if (::symlink(name.c_str(), link.c_str()) != 0) return Errno("cannot create " + link);
  if (::rename(link.c_str(), (dir_ + "/live").c_str()) != 0) {
    return Errno("cannot swap " + dir_ + "/live");
  }
  generation_ = generation;
  last_mtime_ = mtime;
  // Sets older than the one before are no longer read by anyone.
  if (generation >= 3) fs::remove_all(dir_ + "/" + GenerationName(generation - 2), ec);
  return Status::Ok();
}

Status LiveTlsDir::PublishCrls(const TlsMaterial& material) {
  for (const CrlFile& crl : material.crls) {
    if (crl_digests_.count(crl.digest)) continue;
    int& suffix = next_crl_suffix_[crl.issuer_hash];
    char name[64];
    std::snprintf(name, sizeof name, "%08lx.r%d", crl.issuer_hash, suffix);
    const std::string final_path = crl_dir() + "/" + name;
    const std::string temp = crl_dir() + "/.next";
    ::unlink(temp.c_str());
    if (Status s = WriteNew(temp, crl.pem, std::time(nullptr)); !s.ok()) return s;
    // Whole or absent: OpenSSL may look for this name at any handshake.
    if (::rename(temp.c_str(), final_path.c_str()) != 0) return Errno("cannot write " + final_path);
    ++suffix;
    crl_digests_.insert(crl.digest);
  }
  return Status::Ok();
}

}  // namespace ckpt
