// PipelineHost, the daemon's pipelines (pipeline_host.h): their load from the store at start
// (with their groups, their restore sources and the config's declared specs), creation through
// the API, the delete of a pipeline or of an unreadable record, the restore loop's sources and
// pins, and the store's health passed on to every runner. One concept: the set of pipelines and
// how one enters or leaves it, which every part here changes under the same rules (quarantine,
// groups, restore pins); a config reload's ApplyDeclared is in pipeline_host_reload.cc.
//
// Threading: as pipeline_host.h says (Load on the controlling thread; Create blocks and never runs
// on a strand; the rest from any thread).
#include "runtime/pipeline_host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <future>
#include <limits>
#include <map>

#include "core/printable.h"
#include "core/spec_validation.h"

namespace ckpt {

PipelineHost::PipelineHost(IoShards& shards, MetadataStore& store, const Clock& clock,
                           DaemonMetrics& metrics, PipelineHostOptions options,
                           PipelineDefaults defaults,
                           std::function<void(bool writable)> on_store_writable)
    : shards_(shards),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      on_store_writable_(std::move(on_store_writable)),
      store_health_(
          store, shards.control(), [this](bool writable) { OnStoreWritable(writable); },
          options_.store_probe_interval),
      admission_(std::make_shared<RoundAdmission>(options_.admission)),
      runner_context_(std::make_shared<const RunnerContext>(RunnerContext{
          store_, clock_, metrics_, options_.heartbeat_interval_ms, options_.lease_ttl_ms,
          &store_health_, [this](const CheckpointRef& ref) { PinDropped(ref); }, admission_,
          &writes_})),
      defaults_(defaults) {}

PipelineHost::~PipelineHost() {
  CancelApplyDeclared();
  store_health_.Stop();
  JoinBlockingPool();
}

std::shared_ptr<PipelineRunner> PipelineHost::MakeRunner(const StoredPipeline& stored,
                                                         bool restarted) {
  CoordinatorOptions options;
  options.start_spread = StartSpread();
  options.stuck_threshold_ms = options_.stuck_threshold_ms;
  options.savepoint_root = options_.savepoint_root;
  options.savepoint_requests_per_minute = options_.limits.savepoint_requests_per_minute;
  options.max_savepoints = options_.limits.max_savepoints_per_pipeline;
  options.pins = &pins_;
  options.admission = admission_.get();
  auto runner = std::make_shared<PipelineRunner>(shards_.For(stored.record.spec.key), stored,
                                                 restarted, runner_context_, std::move(options));
  runner->SetStartSlot(next_start_slot_.fetch_add(1, std::memory_order_relaxed));
  if (const std::string& group = stored.record.spec.alignment_group; !group.empty()) {
    // Joined before it starts (both are posts to its strand): it never schedules on its own.
    auto joined = groups_.Join(group, stored.record.spec.key);
    if (!joined.ok()) {
      spdlog::error(
          "[{}] names alignment group {}, which it cannot join ({}): it checkpoints "
          "on its own",
          stored.record.spec.key.ToString(), group, joined.status().message());
    } else if (joined->runner) {
      runner->JoinGroup(joined->runner, joined->spec);
    }
  }
  return runner;
}

std::optional<Millis> PipelineHost::StartSpread() const {
  if (!options_.start_spread_ms) return std::nullopt;  // the whole interval
  return Millis(*options_.start_spread_ms);
}

GroupOptions PipelineHost::MakeGroupOptions() {
  GroupOptions options;
  options.start_spread = StartSpread();
  options.start_slot = next_start_slot_.fetch_add(1, std::memory_order_relaxed);
  options.admission = admission_;
  return options;
}

Status PipelineHost::Load(const std::vector<PipelineSpec>& declared_specs,
                          const std::map<PipelineKey, CheckpointRef>& restore_from,
                          const std::vector<AlignmentGroupSpec>& declared_groups,
                          std::chrono::milliseconds group_wait) {
  const auto load_started = std::chrono::steady_clock::now();
  std::vector<UnreadableRecord> invalid_groups;
  if (Status s = groups_.Load(&invalid_groups); !s.ok()) return s;
  auto loaded = store_.LoadPipelines();
  if (!loaded.ok()) return loaded.status();
  const auto read_at = std::chrono::steady_clock::now();
  // What the store could not read is quarantined; everything else loads and runs.
  std::vector<UnreadableRecord> unreadable = store_.UnreadableRecords();
  unreadable.insert(unreadable.end(), invalid_groups.begin(), invalid_groups.end());
  quarantine_.Load(unreadable);
  std::set<std::string> unreadable_groups;
  for (const UnreadableRecord& group : quarantine_.Groups()) unreadable_groups.insert(group.group);
  groups_.SetUnreadable(std::move(unreadable_groups));
  groups_.ApplyDeclared(declared_groups, group_wait);  // each failure logged
  // Pointers into `loaded` (and `created`, for pipelines new from the file), by key: a
  // StoredPipeline is large, and moving 100,000 of them into a map cost a restart 0.3 s.
  std::deque<StoredPipeline> created;
  std::map<PipelineKey, StoredPipeline*> stored;
  for (auto& p : *loaded) {
    // A member of a group that is quarantined cannot take part in its rounds: it waits with it.
    const std::string& group = p.record.spec.alignment_group;
    if (auto held = group.empty() ? std::nullopt : quarantine_.FindGroup(group)) {
      UnreadableRecord record;
      record.pipeline = p.record.spec.key;
      record.group = group;
      record.reason = "a member of alignment group " + group + ", whose record is UNREADABLE (" +
                      held->reason + ")";
      record.held_for_group = true;
      spdlog::error("[{}] quarantined with its group: {}", Printable(record.pipeline.ToString()),
                    Printable(record.reason));
      quarantine_.Add(std::move(record));
      MutexLock lock(held_mu_);
      held_members_[p.record.spec.key] = std::move(p);
      continue;
    }
    stored.emplace_hint(stored.end(), p.record.spec.key, &p);  // the store reads in key order
  }
  // A quarantined member holds its (readable) group, as a missing task would.
  for (const UnreadableRecord& record : quarantine_.Pipelines()) {
    if (!record.group.empty() && !quarantine_.FindGroup(record.group)) {
      groups_.HoldFor(record.group, record.pipeline, "UNREADABLE: " + record.reason);
    }
  }
  metrics_.pipelines_by_state[static_cast<size_t>(PipelineState::kUnreadable)] =
      static_cast<int64_t>(quarantine_.pipelines());

  // Config-declared pipelines are created, or updated to match the file; a pipeline created
  // through the API is left alone, at start as on reload, so that a restart never rewrites what
  // an operator made.
  std::map<PipelineKey, bool> fresh;
  for (const auto& spec : declared_specs) {
    if (auto held = quarantine_.Find(spec.key)) {
      spdlog::error(
          "[{}] declared in the config file but UNREADABLE in the store ({}): left as it is; "
          "delete it (ckptctl pipeline delete) and the file creates it again at the next reload",
          Printable(spec.key.ToString()), Printable(held->reason));
      continue;
    }
    auto it = stored.find(spec.key);
    if (it == stored.end()) {
      StoredPipeline p;
      p.record.spec = spec;
      p.record.from_config = true;
      p.spec_unsaved = true;  // its first write creates the record
      if (auto from = restore_from.find(spec.key); from != restore_from.end()) {
        p.record.restore_from = from->second;  // read and pinned below
      }
      stored[spec.key] = &created.emplace_back(std::move(p));
      fresh[spec.key] = true;
    } else if (!it->second->record.from_config) {
      spdlog::warn(
          "[{}] declared in the config file but created through the API: left alone "
          "(delete it to let the file manage it)",
          spec.key.ToString());
    } else if (it->second->record.spec != spec) {
      spdlog::info("[{}] spec updated from the config file", spec.key.ToString());
      it->second->record.spec = spec;
      it->second->spec_unsaved = true;
    }
  }
  std::set<PipelineKey> declared;
  for (const auto& spec : declared_specs) declared.insert(spec.key);
  for (auto& [key, p] : stored) {
    if (p->record.from_config && !declared.count(key)) {
      // Its restart write persists this: from now on the API manages it (and may delete it).
      spdlog::info(
          "[{}] no longer declared in the config file: managed through the API from now "
          "on (ckptctl pipeline delete removes it)",
          key.ToString());
      p->record.from_config = false;
    }
  }
  // Operator-set restore points: their checkpoints are read, and pinned before any pipeline
  // starts (a start releases what no pin holds outside `retained`).
  for (auto it = stored.begin(); it != stored.end();) {
    const PipelineKey& key = it->first;
    StoredPipeline& p = *it->second;
    if (!p.record.restore_from) {
      ++it;
      continue;
    }
    Result<CompletedCheckpoint> source = ReadRestoreSource(*p.record.restore_from);
    if (!source.ok() && fresh.count(key)) {
      // Created from the file without the state it names, it would start empty for good.
      spdlog::error(
          "[{}] declared in the config file but not created: its restore_from {} cannot be "
          "read ({}); fix the file and reload",
          key.ToString(), p.record.restore_from->ToString(), source.status().message());
      fresh.erase(key);
      it = stored.erase(it);
      continue;
    }
    if (AdoptRestoreSource(key, p, std::move(source))) pins_.Add(*p.record.restore_from, key);
    ++it;
  }
  const auto made_at = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<PipelineRunner>> runners;
  for (const auto& [key, p] : stored) {
    auto runner = MakeRunner(*p, /*restarted=*/!fresh.count(key));
    registry_.Add(runner);
    runners.push_back(std::move(runner));
  }
  for (const auto& runner : runners) runner->Start();
  const auto ms = [](auto from, auto to) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
  };
  const auto started_at = std::chrono::steady_clock::now();
  spdlog::info(
      "{} pipeline(s) loaded ({} new from the config) in {} ms: store read {} ms, sorted {} ms, "
      "runners {} ms",
      stored.size(), fresh.size(), ms(load_started, started_at), ms(load_started, read_at),
      ms(read_at, made_at), ms(made_at, started_at));
  return Status::Ok();
}

void PipelineHost::OnStoreWritable(bool writable) {
  metrics_.store_writable = writable ? 1 : 0;
  for (const auto& runner : registry_.All()) runner->SetStoreWritable(writable);
  if (on_store_writable_) on_store_writable_(writable);
}

Result<CompletedCheckpoint> PipelineHost::ReadRestoreSource(const CheckpointRef& from) {
  if (from.checkpoint_id == std::numeric_limits<int64_t>::max()) {
    return Status::NotFound("checkpoint " + from.ToString() + " is not in the history");
  }
  auto listed =
      store_.ListCompleted(from.key, 1, from.checkpoint_id > 0 ? from.checkpoint_id + 1 : 0);
  if (!listed.ok()) return listed.status();
  if (listed->empty() ||
      (from.checkpoint_id > 0 && listed->front().checkpoint_id != from.checkpoint_id)) {
    return Status::NotFound((from.checkpoint_id > 0
                                 ? "checkpoint " + from.ToString() + " is not"
                                 : "pipeline " + from.key.ToString() + " has no checkpoint") +
                            " in the history (ckptctl checkpoint list shows what is)");
  }
  return std::move(listed->front());
}

Result<std::pair<CheckpointRef, CompletedCheckpoint>> PipelineHost::PinRestoreSource(
    CheckpointRef from, const PipelineKey& holder) {
  auto source = registry_.Find(from.key);
  if (!source) return Status::NotFound("pipeline " + from.key.ToString() + " not found");
  auto checkpoint = ReadRestoreSource(from);
  if (!checkpoint.ok()) return checkpoint.status();
  from.checkpoint_id = checkpoint->checkpoint_id;
  // The source keeps it from now on: pinned on its strand, where its trims are decided.
  auto pinned = std::make_shared<std::promise<Status>>();
  auto result = pinned->get_future();
  source->AddPin(from.checkpoint_id, holder,
                 [pinned](Status s) { pinned->set_value(std::move(s)); });
  try {
    if (Status s = result.get(); !s.ok()) return s;
  } catch (const std::future_error&) {
    // The daemon is stopping: the strand dropped the request unanswered.
    return Status::Unavailable("ckptd is shutting down");
  }
  return std::make_pair(from, std::move(*checkpoint));
}

void PipelineHost::PinRestoreSourceAsync(CheckpointRef from, const PipelineKey& holder,
                                         PinDone done) {
  auto source = registry_.Find(from.key);
  if (!source) return done(Status::NotFound("pipeline " + from.key.ToString() + " not found"));
  auto checkpoint = ReadRestoreSource(from);
  if (!checkpoint.ok()) return done(checkpoint.status());
  from.checkpoint_id = checkpoint->checkpoint_id;
  // Pinned on the source's strand, where its trims are decided; nobody waits for it there.
  auto read = std::make_shared<CompletedCheckpoint>(std::move(*checkpoint));
  source->AddPin(from.checkpoint_id, holder, [from, read, done = std::move(done)](Status s) {
    if (!s.ok()) return done(s);
    done(std::make_pair(from, std::move(*read)));
  });
}

void PipelineHost::UnpinRestoreSource(const CheckpointRef& ref, const PipelineKey& holder) {
  if (pins_.Remove(ref, holder)) PinDropped(ref);
}

void PipelineHost::PinDropped(const CheckpointRef& ref) {
  if (auto source = registry_.Find(ref.key)) source->OnPinDropped(ref.checkpoint_id);
}

void PipelineHost::Restore(const std::shared_ptr<PipelineRunner>& target, CheckpointRef from,
                           std::function<void(Status, const PipelineStatus&)> done) {
  PinRestoreSourceAsync(
      std::move(from), target->key(),
      [this, target, done = std::move(done)](
          Result<std::pair<CheckpointRef, CompletedCheckpoint>> pinned) mutable {
        if (!pinned.ok()) return done(pinned.status(), {});
        const CheckpointRef ref = pinned->first;  // a copy: a lambda cannot capture a binding
        target->Restore(ref.key, std::move(pinned->second),
                        [this, ref, holder = target->key(), done = std::move(done)](
                            Status s, const PipelineStatus& status) {
                          if (s.code() == StatusCode::kFailedPrecondition ||
                              s.code() == StatusCode::kNotFound) {
                            UnpinRestoreSource(ref, holder);  // refused: nothing holds it
                          }
                          done(std::move(s), status);
                        });
      });
}

void PipelineHost::Create(
    const PipelineSpec& spec, CreateDone done, bool from_config,
    std::optional<std::pair<CheckpointRef, CompletedCheckpoint>> restore_from) {
  if (restore_from) {
    // Whatever the outcome, a pin not taken over by the new pipeline is let go.
    done = [this, ref = restore_from->first, holder = spec.key,
            done = std::move(done)](Result<std::shared_ptr<PipelineRunner>> created) {
      if (!created.ok()) UnpinRestoreSource(ref, holder);
      done(std::move(created));
    };
  }
  if (auto s = ValidateSpec(spec); !s.ok()) return done(s);
  if (auto s = CheckSpecLimits(spec, options_.limits); !s.ok()) return done(s);
  if (!spec.alignment_group.empty()) {
    if (auto s = groups_.CheckJoin(spec.alignment_group); !s.ok()) return done(s);
  }
  if (refusing_creates_.load()) return done(Status::Unavailable("ckptd is shutting down"));
  if (auto held = quarantine_.Find(spec.key)) {
    return done(Status::AlreadyExists("pipeline " + spec.key.ToString() +
                                      " exists but is UNREADABLE (" + held->reason +
                                      "); delete it first (ckptctl pipeline delete)"));
  }
  {
    MutexLock lock(creating_mu_);
    if (registry_.Find(spec.key) || !creating_.insert(spec.key).second) {
      return done(Status::AlreadyExists("pipeline " + spec.key.ToString() + " exists"));
    }
    // Counted with the creates under way, so that concurrent creates cannot pass the limit.
    if (static_cast<int64_t>(registry_.size() + creating_.size()) > options_.limits.max_pipelines) {
      creating_.erase(spec.key);
      metrics_.CountLimit(CountedLimit::kMaxPipelines);
      return done(Status::ResourceExhausted(
          "pipeline " + spec.key.ToString() +
          " not created: " + NameLimit("max_pipelines", options_.limits.max_pipelines) +
          " reached; delete pipelines or raise the limit"));
    }
  }
  auto created = [this, key = spec.key]() CKPT_EXCLUDES(creating_mu_) {
    MutexLock lock(creating_mu_);
    creating_.erase(key);
  };
  // Ids are never reused, not even after Delete and a create under the same name.
  auto counter = store_.LoadIdCounter(spec.key);
  if (!counter.ok()) {
    created();
    return done(counter.status());
  }
  StoredPipeline stored;
  stored.record.spec = spec;
  stored.record.from_config = from_config;
  stored.id_counter = *counter;
  if (restore_from) {
    stored.record.restore_from = restore_from->first;
    stored.restore_source = std::move(restore_from->second);
  }
  store_.PutPipeline(
      stored.record, [this, stored, created, done = std::move(done)](const Status& s) {
        store_health_.Report(s);
        if (!s.ok()) {
          created();
          return done(Status::Unavailable("storing the pipeline failed: " + s.message()));
        }
        auto runner = MakeRunner(stored, /*restarted=*/false);
        const bool added = registry_.Add(runner);
        created();
        if (!added) {
          return done(
              Status::AlreadyExists("pipeline " + stored.record.spec.key.ToString() + " exists"));
        }
        runner->Start();
        // Its record was on its way when shutdown began, which does not know of it: it starts
        // shut down (no trigger; the restart loads it).
        if (refusing_creates_.load()) runner->BeginShutdown();
        spdlog::info("[{}] pipeline created ({} tasks, interval {} ms)",
                     stored.record.spec.key.ToString(), stored.record.spec.task_ids.size(),
                     stored.record.spec.interval_ms);
        done(runner);
      });
}

void PipelineHost::Delete(const std::shared_ptr<PipelineRunner>& runner,
                          std::function<void(Status)> done) {
  const std::string declared_in =
      options_.config_source.empty() ? "(none)" : options_.config_source;
  // The runner deletes the record; the name is free only once that answered, so a create of the
  // same name writes its record after the delete, never deleted by it. A refusal (config file,
  // pins) leaves the pipeline where it is.
  runner->Delete(
      [this, key = runner->key(), done = std::move(done)](const Status& s, bool stopped) {
        if (stopped) {
          registry_.Remove(key);
          groups_.Leave(key);
        }
        done(s);
      },
      declared_in);
}

void PipelineHost::DeleteUnreadable(const PipelineKey& key, std::function<void(Status)> done) {
  auto held = quarantine_.Find(key);
  if (!held) return done(Status::NotFound("pipeline " + key.ToString() + " is not UNREADABLE"));
  store_.DeleteUnreadablePipeline(key, [this, record = *held, done = std::move(done)](Status s) {
    ReportStoreWrite(s);
    if (s.ok() && !quarantine_.Remove(record.pipeline)) {
      // Its group was deleted meanwhile and it loaded: the record this deleted comes back with
      // its first write.
      return done(Status::Aborted("pipeline " + record.pipeline.ToString() +
                                  " was loaded meanwhile (its alignment group was deleted); "
                                  "delete it again"));
    }
    if (s.ok()) {
      {
        MutexLock lock(held_mu_);
        held_members_.erase(record.pipeline);
      }
      metrics_.pipelines_by_state[static_cast<size_t>(PipelineState::kUnreadable)] =
          static_cast<int64_t>(quarantine_.pipelines());
      if (!record.group.empty()) groups_.Release(record.group, record.pipeline);
      spdlog::info(
          "[{}] UNREADABLE pipeline deleted; a pipeline created under its name starts "
          "its ids above every id the store gave",
          Printable(record.pipeline.ToString()));
    }
    done(s);
  });
}

bool PipelineHost::AdoptRestoreSource(const PipelineKey& key, StoredPipeline& p,
                                      Result<CompletedCheckpoint> source) {
  if (!source.ok()) {
    spdlog::error(
        "[{}] its restore point {} cannot be read ({}); it restores from its own newest "
        "checkpoint instead",
        key.ToString(), p.record.restore_from->ToString(), source.status().ToString());
    return false;
  }
  // The newest, when the file names no id.
  p.record.restore_from->checkpoint_id = source->checkpoint_id;
  p.restore_source = std::move(*source);
  return true;
}

void PipelineHost::DeleteUnreadableGroup(const std::string& name,
                                         std::function<void(Status)> done) {
  if (!quarantine_.FindGroup(name)) {
    return done(Status::NotFound("alignment group " + name + " is not UNREADABLE"));
  }
  store_.DeleteGroup(name, [this, name, done = std::move(done)](Status s) mutable {
    ReportStoreWrite(s);
    if (!s.ok()) return done(s);
    quarantine_.RemoveGroup(name);
    groups_.ForgetUnreadable(name);
    spdlog::info("alignment group {} (UNREADABLE) deleted; its members load outside any group",
                 Printable(name));
    // Reading the members' records again blocks: not on the store's writer thread.
    auto shared_done = std::make_shared<std::function<void(Status)>>(std::move(done));
    if (!writes_.Post([this, name, shared_done] { (*shared_done)(ReleaseMembersOf(name)); })) {
      (*shared_done)(Status::ResourceExhausted(
          "alignment group " + name +
          " deleted, but the daemon's create queue is full: its members load at the next "
          "start"));
    }
  });
}

Status PipelineHost::ReleaseMembersOf(const std::string& group) {
  if (refusing_creates_.load()) {
    return Status::Unavailable("alignment group " + group +
                               " deleted as ckptd shuts down: its members load at the next start");
  }
  for (const PipelineKey& key : quarantine_.HeldFor(group)) {
    StoredPipeline p;
    {
      MutexLock lock(held_mu_);
      auto it = held_members_.find(key);
      if (it == held_members_.end()) continue;
      p = std::move(it->second);
      held_members_.erase(it);
    }
    // A DeletePipeline of the member that got here first has it: it stays deleted.
    if (!quarantine_.Remove(key)) continue;
    // Its group is gone: it checkpoints on its own, and its restart write stores that.
    p.record.spec.alignment_group.clear();
    p.spec_unsaved = true;
    std::optional<CheckpointRef> pinned;
    if (p.record.restore_from) {
      // Pinned on the source's strand, where its trims are decided: it runs already.
      auto source = PinRestoreSource(*p.record.restore_from, key);
      if (source.ok()) pinned = source->first;
      AdoptRestoreSource(key, p,
                         source.ok() ? Result<CompletedCheckpoint>(std::move(source->second))
                                     : Result<CompletedCheckpoint>(source.status()));
    }
    auto runner = MakeRunner(p, /*restarted=*/true);
    if (!registry_.Add(runner)) {
      // A create of the same name came first (the name was free once it left the quarantine).
      if (pinned) UnpinRestoreSource(*pinned, key);
      spdlog::warn(
          "[{}] not loaded after its group {} was deleted: a pipeline of that name was "
          "created meanwhile",
          Printable(key.ToString()), Printable(group));
      continue;
    }
    runner->Start();
    if (refusing_creates_.load()) runner->BeginShutdown();  // as Create's runner does
    spdlog::info("[{}] loaded: its alignment group {} was deleted", Printable(key.ToString()),
                 Printable(group));
  }
  metrics_.pipelines_by_state[static_cast<size_t>(PipelineState::kUnreadable)] =
      static_cast<int64_t>(quarantine_.pipelines());
  return Status::Ok();
}

PipelineDefaults PipelineHost::defaults() const {
  MutexLock lock(defaults_mu_);
  return defaults_;
}

void PipelineHost::SetDefaults(const PipelineDefaults& defaults) {
  MutexLock lock(defaults_mu_);
  defaults_ = defaults;
}

}  // namespace ckpt
