#include "sim/state_files.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace ckpt::sim {
namespace {

std::string EncodeSegment(const std::string& id) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : id) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

}  // namespace

std::string StateFiles::CheckpointDir(const std::string& job, const std::string& pipeline,
                                      int64_t checkpoint_id) const {
  return dir_ + "/" + EncodeSegment(job) + "/" + EncodeSegment(pipeline) + "/chk-" +
         std::to_string(checkpoint_id);
}

std::string StateFiles::Write(const std::string& job, const std::string& pipeline,
                              int64_t checkpoint_id, const std::string& task,
                              std::string* error) const {
  const std::string dir = CheckpointDir(job, pipeline, checkpoint_id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *error = "cannot create " + dir + ": " + ec.message();
    return "";
  }
  const std::string path = dir + "/" + EncodeSegment(task);
  std::ofstream file(path, std::ios::trunc);
  file << job << ' ' << pipeline << ' ' << checkpoint_id << ' ' << task << '\n';
  file.close();
  if (!file) {
    *error = "cannot write " + path;
    return "";
  }
  return path;
}

void StateFiles::Remove(const std::string& job, const std::string& pipeline, int64_t checkpoint_id,
                        const std::string& task) const {
  const std::string dir = CheckpointDir(job, pipeline, checkpoint_id);
  std::error_code ec;
  std::filesystem::remove(dir + "/" + EncodeSegment(task), ec);
  std::filesystem::remove(dir, ec);  // only succeeds once empty: the other tasks' files stay
}

bool StateFiles::Exists(const std::string& uri) {
  std::error_code ec;
  return std::filesystem::is_regular_file(uri, ec);
}

}  // namespace ckpt::sim
