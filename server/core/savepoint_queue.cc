#include "core/savepoint_queue.h"

#include <algorithm>

#include "core/path_segment.h"

namespace ckpt {

SavepointQueue::State& SavepointQueue::state() {
  if (!state_) state_ = std::make_unique<State>();
  return *state_;
}

SavepointQueue::Offered SavepointQueue::Offer(Request request) {
  State& s = state();
  if (!s.queued) {
    s.queued = std::make_unique<Request>(std::move(request));
    return Offered::kQueued;
  }
  if (s.queued->stop != request.stop || s.queued->target != request.target) {
    return Offered::kDiffers;
  }
  s.queued->worker_asked = s.queued->worker_asked || request.worker_asked;
  return Offered::kJoined;
}

std::optional<SavepointQueue::Request> SavepointQueue::Take() {
  if (!state_ || !state_->queued) return std::nullopt;
  std::optional<Request> taken = std::move(*state_->queued);
  state_->queued.reset();
  if (state_->worker_times.empty()) state_.reset();
  return taken;
}

bool SavepointQueue::DropIfNoWorkerWaits() {
  if (!queued() || queued()->worker_asked) return false;
  Take();
  return true;
}

Status SavepointQueue::CheckWorkerTarget(const std::string& target, const std::string& job_root) {
  if (target.empty() || PathIsUnder(target, job_root)) return Status::Ok();
  return Status::PermissionDenied("a worker's savepoint target must lie under " + job_root +
                                  "/ (savepoint_root/<its job>) or be empty; " + target +
                                  " does not");
}

Status SavepointQueue::AdmitWorkerRequest(SteadyTime now, int64_t per_minute) {
  std::vector<SteadyTime>& times = state().worker_times;
  times.erase(times.begin(), std::find_if(times.begin(), times.end(), [&](SteadyTime t) {
                return now - t < std::chrono::minutes(1);
              }));
  if (static_cast<int64_t>(times.size()) >= per_minute) {
    return Status::ResourceExhausted("more than limits.savepoint_requests_per_minute (" +
                                     std::to_string(per_minute) +
                                     ") worker savepoint requests in the last minute");
  }
  times.push_back(now);
  return Status::Ok();
}

}  // namespace ckpt
