#include "runtime/alignment_groups.h"

#include <spdlog/spdlog.h>

#include <future>

#include "core/printable.h"
#include "core/spec_validation.h"
#include "store/group_rules.h"

namespace ckpt {

AlignmentGroups::~AlignmentGroups() {
  MutexLock lock(mu_);
  for (auto& [name, runner] : runners_) runner->Stop();
}

Status AlignmentGroups::Load(std::vector<UnreadableRecord>* unreadable) {
  auto loaded = store_.LoadGroups();
  if (!loaded.ok()) return loaded.status();
  MutexLock lock(mu_);
  groups_.clear();
  for (auto& [name, runner] : runners_) runner->Stop();
  runners_.clear();
  for (StoredGroup& group : *loaded) {
    if (Status s = ValidateStoredGroup(group); !s.ok()) {
      // The group alone is quarantined; its members wait for it.
      UnreadableRecord record;
      record.kind = UnreadableRecord::Kind::kGroup;
      record.group = group.spec.name;
      record.reason =
          "alignment group " + group.spec.name + " in the store is not valid: " + s.message();
      spdlog::error("alignment group {} is quarantined (UNREADABLE): {}",
                    Printable(group.spec.name), Printable(record.reason));
      if (unreadable) unreadable->push_back(std::move(record));
      continue;
    }
    SyncRunner(group);
    std::string name = group.spec.name;
    groups_.emplace(std::move(name), std::move(group));
  }
  return Status::Ok();
}

void AlignmentGroups::SyncRunner(const StoredGroup& group) {
  if (!make_runner_) return;
  auto it = runners_.find(group.spec.name);
  if (it != runners_.end()) {
    it->second->UpdateSpec(group.spec);
    return;
  }
  auto runner = make_runner_(group);
  runner->Start();
  runners_.emplace(group.spec.name, std::move(runner));
}

Status AlignmentGroups::CheckJoinLocked(const std::string& name) const {
  if (!groups_.count(name) || deleting_.count(name)) {
    return Status::FailedPrecondition("no alignment group " + name +
                                      ": create it first (ckptctl group put " + name + ")");
  }
  if (auto it = members_.find(name);
      it != members_.end() && it->second.size() >= kMaxGroupMembers) {
    return Status::FailedPrecondition("alignment group " + name + " has " +
                                      std::to_string(kMaxGroupMembers) +
                                      " members, as many as a group may have");
  }
  return Status::Ok();
}

Status AlignmentGroups::CheckJoin(const std::string& name) const {
  MutexLock lock(mu_);
  return CheckJoinLocked(name);
}

Result<AlignmentGroups::Joined> AlignmentGroups::Join(const std::string& name,
                                                      const PipelineKey& key) {
  MutexLock lock(mu_);
  if (Status s = CheckJoinLocked(name); !s.ok() && !members_[name].count(key)) return s;
  members_[name].insert(key);
  Joined joined;
  joined.spec = groups_.at(name).spec;
  if (auto it = runners_.find(name); it != runners_.end()) joined.runner = it->second;
  return joined;
}

void AlignmentGroups::Leave(const PipelineKey& key) {
  MutexLock lock(mu_);
  for (auto it = members_.begin(); it != members_.end();) {
    it->second.erase(key);
    it = it->second.empty() ? members_.erase(it) : std::next(it);
  }
}

void AlignmentGroups::HoldFor(const std::string& name, const PipelineKey& key,
                              const std::string& why) {
  std::shared_ptr<GroupRunner> runner;
  {
    MutexLock lock(mu_);
    if (!groups_.count(name)) return;
    members_[name].insert(key);
    if (auto it = runners_.find(name); it != runners_.end()) runner = it->second;
  }
  if (!runner) return;
  runner->AddMember(key, {}, 0);  // no runner behind it: never ready, never in a round
  runner->MemberState(key, false, why);
}

void AlignmentGroups::Release(const std::string& name, const PipelineKey& key) {
  Leave(key);
  if (auto runner = Runner(name)) runner->RemoveMember(key, "deleted");
}

std::shared_ptr<GroupRunner> AlignmentGroups::Runner(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = runners_.find(name);
  return it == runners_.end() ? nullptr : it->second;
}

int AlignmentGroups::ApplyDeclared(const std::vector<AlignmentGroupSpec>& declared,
                                   std::chrono::milliseconds wait) {
  std::set<std::string> names;
  std::vector<std::pair<std::string, std::future<Status>>> writes;
  for (const AlignmentGroupSpec& spec : declared) {
    names.insert(spec.name);
    std::optional<StoredGroup> held;
    {
      MutexLock lock(mu_);
      if (auto it = groups_.find(spec.name); it != groups_.end()) held = it->second;
    }
    if (held && !held->from_config) {
      spdlog::warn(
          "alignment group {} is declared in the config file but was created through the API: "
          "left alone (delete it to let the file manage it)",
          spec.name);
      continue;
    }
    if (held && held->spec == spec) continue;
    auto promise = std::make_shared<std::promise<Status>>();
    writes.emplace_back(spec.name, promise->get_future());
    Put(AlignmentGroupUpdate{spec.name, spec.interval_ms, spec.timeout_ms, spec.min_pause_ms,
                             spec.position_interval, spec.commit_timeout_ms, spec.max_overhead,
                             spec.max_interval_ms},
        PipelineDefaults{}, /*from_config=*/true,
        [promise](Result<AlignmentGroupView> view) { promise->set_value(view.status()); });
  }
  std::vector<StoredGroup> undeclared;
  {
    MutexLock lock(mu_);
    for (const auto& [name, group] : groups_) {
      if (group.from_config && !names.count(name)) undeclared.push_back(group);
    }
  }
  for (const StoredGroup& group : undeclared) {
    spdlog::info(
        "alignment group {} is no longer declared in the config file: managed through the API "
        "from now on",
        group.spec.name);
    auto promise = std::make_shared<std::promise<Status>>();
    writes.emplace_back(group.spec.name, promise->get_future());
    if (!BeginWrite(group.spec.name)) {
      promise->set_value(Busy(group.spec.name));
      continue;
    }
    store_.PutGroup(group.spec, /*from_config=*/false,
                    [this, name = group.spec.name, promise](Status s) {
                      {
                        MutexLock lock(mu_);
                        writing_.erase(name);
                        if (auto it = groups_.find(name); s.ok() && it != groups_.end()) {
                          it->second.from_config = false;
                        }
                      }
                      promise->set_value(s);
                    });
  }
  int failed = 0;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (auto& [name, future] : writes) {
    if (future.wait_until(deadline) != std::future_status::ready) {
      spdlog::error("alignment group {} from the config file: the store did not answer in {} ms",
                    name, wait.count());
      ++failed;
      continue;
    }
    if (Status s = future.get(); !s.ok()) {
      spdlog::error("alignment group {} from the config file: {}", name, s.ToString());
      ++failed;
    }
  }
  return failed;
}

void AlignmentGroups::SetUnreadable(std::set<std::string> names) {
  MutexLock lock(mu_);
  unreadable_ = std::move(names);
}

void AlignmentGroups::ForgetUnreadable(const std::string& name) {
  MutexLock lock(mu_);
  unreadable_.erase(name);
}

void AlignmentGroups::Put(const AlignmentGroupUpdate& update, const PipelineDefaults& defaults,
                          bool from_config, ViewDone done) {
  StoredGroup next;
  {
    MutexLock lock(mu_);
    if (unreadable_.count(update.name)) {
      return done(Status::FailedPrecondition(
          "alignment group " + update.name + " is UNREADABLE in the store: ckptctl group delete " +
          update.name +
          " removes it (its members then load outside any group), then it may be put again"));
    }
    auto it = groups_.find(update.name);
    if (it != groups_.end()) {
      if (it->second.from_config != from_config) {
        return done(Status::FailedPrecondition(
            "alignment group " + update.name +
            (it->second.from_config
                 ? " is declared in the config file: change it there and reload"
                 : " was created through the API: delete it to let the config file declare it")));
      }
      next = it->second;
    } else if (static_cast<int64_t>(groups_.size() + writing_.size()) >= max_groups_) {
      if (metrics_) metrics_->CountLimit(CountedLimit::kMaxPipelines);
      return done(Status::ResourceExhausted("alignment group " + update.name +
                                            " not created: at most " + std::to_string(max_groups_) +
                                            " groups (limits.max_pipelines); delete groups first"));
    } else {
      next.spec.name = update.name;
      next.spec.interval_ms = defaults.interval_ms;
      next.spec.timeout_ms = defaults.timeout_ms;
      next.spec.min_pause_ms = defaults.min_pause_ms;
    }
  }
  if (update.interval_ms) next.spec.interval_ms = *update.interval_ms;
  if (update.timeout_ms) next.spec.timeout_ms = *update.timeout_ms;
  if (update.min_pause_ms) next.spec.min_pause_ms = *update.min_pause_ms;
  if (update.position_interval) next.spec.position_interval = *update.position_interval;
  if (update.commit_timeout_ms) next.spec.commit_timeout_ms = *update.commit_timeout_ms;
  if (update.max_overhead) next.spec.max_overhead = *update.max_overhead;
  if (update.max_interval_ms) next.spec.max_interval_ms = *update.max_interval_ms;
  next.from_config = from_config;
  if (Status s = ValidateGroupSpec(next.spec); !s.ok()) return done(s);
  if (!BeginWrite(next.spec.name)) return done(Busy(next.spec.name));
  store_.PutGroup(next.spec, from_config, [this, next, done = std::move(done)](Status s) {
    std::optional<AlignmentGroupView> view;
    {
      MutexLock lock(mu_);
      writing_.erase(next.spec.name);
      if (s.ok()) {
        StoredGroup& held = groups_[next.spec.name];
        held.spec = next.spec;  // the progress the store keeps is the one held
        held.from_config = next.from_config;
        SyncRunner(held);
        view = ViewOf(held);
      }
    }
    if (!view) return done(s);
    done(std::move(*view));
  });
}

bool AlignmentGroups::BeginWrite(const std::string& name) {
  MutexLock lock(mu_);
  return writing_.insert(name).second;
}

Status AlignmentGroups::Busy(const std::string& name) {
  return Status::Aborted("another change of alignment group " + name +
                         " is being written; try again");
}

std::optional<AlignmentGroupView> AlignmentGroups::Get(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = groups_.find(name);
  if (it == groups_.end()) return std::nullopt;
  return ViewOf(it->second);
}

void AlignmentGroups::Describe(const std::string& name, ViewDone done) const {
  std::optional<AlignmentGroupView> view = Get(name);
  if (!view) return done(Status::NotFound("no alignment group " + name));
  std::shared_ptr<GroupRunner> runner = Runner(name);
  if (!runner) return done(std::move(*view));
  runner->Inspect(
      [view = std::move(*view), done = std::move(done)](const GroupCoordinator& group) mutable {
        view.group.progress = group.progress();
        view.live = group.Explain();
        done(std::move(view));
      });
}

std::vector<AlignmentGroupView> AlignmentGroups::List() const {
  MutexLock lock(mu_);
  std::vector<AlignmentGroupView> views;
  views.reserve(groups_.size());
  for (const auto& [name, group] : groups_) views.push_back(ViewOf(group));
  return views;
}

void AlignmentGroups::Delete(const std::string& name, Done done) {
  {
    MutexLock lock(mu_);
    auto it = groups_.find(name);
    if (it == groups_.end()) return done(Status::NotFound("no alignment group " + name));
    if (it->second.from_config) {
      return done(Status::FailedPrecondition("alignment group " + name +
                                             " is declared in the config file: remove it there "
                                             "and reload"));
    }
    if (auto members = members_.find(name); members != members_.end() && !members->second.empty()) {
      const PipelineKey& first = *members->second.begin();
      return done(Status::FailedPrecondition(
          "alignment group " + name + " has " + std::to_string(members->second.size()) +
          " member(s), " + first.ToString() + " the first: move them out of it first"));
    }
    // In the same step as the member check: nobody joins from here on.
    if (!writing_.insert(name).second) return done(Busy(name));
    deleting_.insert(name);
  }
  store_.DeleteGroup(name, [this, name, done = std::move(done)](Status s) {
    {
      MutexLock lock(mu_);
      writing_.erase(name);
      deleting_.erase(name);
      if (s.ok()) {
        groups_.erase(name);
        if (auto it = runners_.find(name); it != runners_.end()) {
          it->second->Stop();
          runners_.erase(it);
        }
      }
    }
    done(s);
  });
}

AlignmentGroupView AlignmentGroups::ViewOf(const StoredGroup& group) const {
  AlignmentGroupView view;
  view.group = group;
  if (auto runner = runners_.find(group.spec.name); runner != runners_.end()) {
    view.group.progress = runner->second->progress();  // the rounds since the load
  }
  if (auto it = members_.find(group.spec.name); it != members_.end()) {
    view.members.assign(it->second.begin(), it->second.end());
  }
  return view;
}

}  // namespace ckpt
