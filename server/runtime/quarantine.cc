#include "runtime/quarantine.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/printable.h"
#include "core/spec_validation.h"

namespace ckpt {

namespace {

// Whether a request can name it: the rules every id of a request meets (ValidateId), so that what
// is listed can also be deleted.
bool NameableInApi(const std::string& name) { return ValidateId(name, "name").ok(); }

bool NameableInApi(const UnreadableRecord& record) {
  switch (record.kind) {
    case UnreadableRecord::Kind::kPipeline:
      return NameableInApi(record.pipeline.job_id) && NameableInApi(record.pipeline.pipeline_id);
    case UnreadableRecord::Kind::kGroup: return NameableInApi(record.group);
    case UnreadableRecord::Kind::kUnknownKey: return true;
  }
  return false;
}

}  // namespace

void Quarantine::Load(const std::vector<UnreadableRecord>& records) {
  MutexLock lock(mu_);
  pipelines_.clear();
  groups_.clear();
  unknown_keys_ = 0;
  for (const UnreadableRecord& record : records) {
    if (!NameableInApi(record)) {
      ++unknown_keys_;
      spdlog::error(
          "store: a record whose name no request can carry cannot be listed or deleted through "
          "the API; remove it by hand (etcdctl del, or sqlite3): {}",
          Printable(record.reason));
      continue;
    }
    switch (record.kind) {
      case UnreadableRecord::Kind::kPipeline: pipelines_[record.pipeline] = record; break;
      case UnreadableRecord::Kind::kGroup: groups_[record.group] = record; break;
      case UnreadableRecord::Kind::kUnknownKey: ++unknown_keys_; break;
    }
  }
}

void Quarantine::Add(UnreadableRecord record) {
  MutexLock lock(mu_);
  if (record.kind == UnreadableRecord::Kind::kGroup) {
    std::string name = record.group;
    groups_[std::move(name)] = std::move(record);
  } else {
    PipelineKey key = record.pipeline;
    pipelines_[std::move(key)] = std::move(record);
  }
}

std::optional<UnreadableRecord> Quarantine::Find(const PipelineKey& key) const {
  MutexLock lock(mu_);
  auto it = pipelines_.find(key);
  if (it == pipelines_.end()) return std::nullopt;
  return it->second;
}

std::optional<UnreadableRecord> Quarantine::FindGroup(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = groups_.find(name);
  if (it == groups_.end()) return std::nullopt;
  return it->second;
}

std::vector<UnreadableRecord> Quarantine::Pipelines() const {
  MutexLock lock(mu_);
  std::vector<UnreadableRecord> all;
  for (const auto& [key, record] : pipelines_) all.push_back(record);
  return all;
}

std::vector<UnreadableRecord> Quarantine::Groups() const {
  MutexLock lock(mu_);
  std::vector<UnreadableRecord> all;
  for (const auto& [name, record] : groups_) all.push_back(record);
  return all;
}

size_t Quarantine::pipelines() const {
  MutexLock lock(mu_);
  return pipelines_.size();
}

size_t Quarantine::records() const {
  MutexLock lock(mu_);
  return pipelines_.size() + groups_.size() + unknown_keys_;
}

bool Quarantine::Remove(const PipelineKey& key) {
  MutexLock lock(mu_);
  return pipelines_.erase(key) > 0;
}

bool Quarantine::RemoveGroup(const std::string& name) {
  MutexLock lock(mu_);
  return groups_.erase(name) > 0;
}

std::vector<PipelineKey> Quarantine::HeldFor(const std::string& group) const {
  MutexLock lock(mu_);
  std::vector<PipelineKey> held;
  for (const auto& [key, record] : pipelines_) {
    if (record.held_for_group && record.group == group) held.push_back(key);
  }
  return held;
}

Status UnreadableStatus(const UnreadableRecord& record) {
  if (record.kind == UnreadableRecord::Kind::kGroup) {
    return Status::FailedPrecondition("alignment group " + record.group + " is UNREADABLE: " +
                                      record.reason + "; ckptctl group delete " + record.group +
                                      " removes it (its members then load outside any group)");
  }
  return Status::FailedPrecondition("pipeline " + record.pipeline.ToString() +
                                    " is UNREADABLE: " + record.reason +
                                    "; ckptctl pipeline delete " + record.pipeline.job_id + " " +
                                    record.pipeline.pipeline_id + " removes it");
}

}  // namespace ckpt
