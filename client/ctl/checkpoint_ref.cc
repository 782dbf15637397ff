#include "ctl/checkpoint_ref.h"

#include <charconv>

namespace ckpt::ctl {

std::optional<v1::CheckpointRef> ParseCheckpointRef(const std::string& text, std::string* error) {
  const auto fail = [&](const std::string& why) {
    *error = "'" + text + "': " + why + " (expected JOB/PIPELINE or JOB/PIPELINE@ID)";
    return std::nullopt;
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return fail("no '/' between job and pipeline");
  std::string job = text.substr(0, slash);
  std::string rest = text.substr(slash + 1);
  int64_t id = 0;
  if (const size_t at = rest.rfind('@'); at != std::string::npos) {
    const std::string digits = rest.substr(at + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || id <= 0) {
      return fail("the checkpoint id after '@' must be a positive number");
    }
    rest.resize(at);
  }
  if (job.empty() || rest.empty()) return fail("an empty job or pipeline id");
  if (rest.find('/') != std::string::npos) return fail("more than one '/'");
  v1::CheckpointRef ref;
  ref.set_job_id(std::move(job));
  ref.set_pipeline_id(std::move(rest));
  ref.set_checkpoint_id(id);
  return ref;
}

}  // namespace ckpt::ctl
