#include "sdk/token_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/bearer_token.h"

namespace ckpt::sdk::internal {
namespace {

int64_t Nanoseconds(const timespec& time) {
  return static_cast<int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

}  // namespace

bool TokenSource::Settled(const FileVersion& version) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return Nanoseconds(now) - version.modified_ns > kSettledNs &&
         Nanoseconds(now) - version.changed_ns > kSettledNs;
}

TokenSource::TokenSource(std::string option, std::string path, std::string token)
    : option_(std::move(option)), path_(std::move(path)), token_(std::move(token)) {
  // version_ stays unknown: the first attempt reads the file again, in case it changed since the
  // runtime's constructor read it.
}

bool TokenSource::Inspect(FileVersion* version) const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return false;
  version->device = st.st_dev;
  version->inode = st.st_ino;
  version->size = st.st_size;
  version->modified_ns = Nanoseconds(st.st_mtim);
  version->changed_ns = Nanoseconds(st.st_ctim);
  return true;
}

std::string TokenSource::Current() {
  if (path_.empty()) return "";
  std::lock_guard<std::mutex> lock(mu_);
  FileVersion now;
  std::string problem;
  if (!Inspect(&now)) {
    problem = option_ + " " + path_ + ": " +
              (errno == ENOENT ? std::string("no such file")
                               : std::string("cannot inspect it: ") + std::strerror(errno));
  } else if (now == version_ && version_settled_ && last_problem_.empty()) {
    return token_;
  } else if (std::optional<std::string> token =
                 cli::ReadBearerTokenFile(option_, path_, &problem)) {
    token_ = std::move(*token);
    version_ = now;
    version_settled_ = Settled(now);
    last_problem_.clear();
    return token_;
  }
  // Thousands of pipelines reconnecting at once would each say it: once is enough.
  if (problem != last_problem_) {
    std::fprintf(stderr, "ckpt worker sdk: %s; still sending the token read before\n",
                 problem.c_str());
    last_problem_ = problem;
  }
  return token_;
}

}  // namespace ckpt::sdk::internal
