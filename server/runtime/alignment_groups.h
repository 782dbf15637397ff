#pragma once
// AlignmentGroups: the daemon's alignment groups (docs/PROTOCOL.md, "Aligned checkpoints";
// docs/ALIGNMENT.md) as the store holds them, which pipelines are their members, and the
// GroupRunner that drives each group's rounds. The operator API puts, reads and deletes them
// here; a change answers once the store made it durable.
//
// Threading: every method from any thread; the map is guarded by mu_. Load blocks (a store read)
// and runs before serving. `done` runs on the store's writer thread and must not block.

#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "core/types.h"
#include "runtime/daemon_metrics.h"
#include "runtime/group_runner.h"
#include "store/metadata_store.h"

namespace ckpt {

// A Put's fields: unset ones take `defaults` on create and keep their value on a change.
struct AlignmentGroupUpdate {
  std::string name;
  std::optional<int64_t> interval_ms;
  std::optional<int64_t> timeout_ms;
  std::optional<int64_t> min_pause_ms;
  std::optional<int64_t> position_interval;
  std::optional<int64_t> commit_timeout_ms;
  std::optional<double> max_overhead;
  std::optional<int64_t> max_interval_ms;
};

// A group as the API shows it.
struct AlignmentGroupView {
  StoredGroup group;                     // its progress as of the last round the runner ended
  std::vector<PipelineKey> members;      // in key order
  std::optional<GroupExplanation> live;  // Describe only: what holds it now
};

class AlignmentGroups {
 public:
  using ViewDone = std::function<void(Result<AlignmentGroupView>)>;
  using Done = std::function<void(Status)>;

  // Makes (does not start) the runner of a group; may be null (no rounds: the API alone).
  using RunnerFactory = std::function<std::shared_ptr<GroupRunner>(const StoredGroup&)>;

  // `store` must outlive this object.
  // At most `max_groups` groups (a group's members are pipelines: limits.max_pipelines bounds
  // both); a Put creating one more is RESOURCE_EXHAUSTED, counted in `metrics` when given.
  explicit AlignmentGroups(MetadataStore& store, RunnerFactory make_runner = nullptr,
                           int64_t max_groups = std::numeric_limits<int64_t>::max(),
                           DaemonMetrics* metrics = nullptr)
      : store_(store),
        make_runner_(std::move(make_runner)),
        max_groups_(max_groups),
        metrics_(metrics) {}
  ~AlignmentGroups();

  // The groups whose stored record could not be read (runtime/quarantine.h): a Put of one is
  // refused (its members wait for it; a new record would leave them waiting), until
  // ForgetUnreadable once it is deleted. Set at each load, before ApplyDeclared.
  void SetUnreadable(std::set<std::string> names);
  void ForgetUnreadable(const std::string& name);

  // Blocking: reads every group from the store (replacing what is held). At start and takeover.
  // A group whose record does not validate is left out and added to `unreadable` (quarantined:
  // runtime/quarantine.h); one the store could not read at all, the store reports.
  Status Load(std::vector<UnreadableRecord>* unreadable = nullptr);

  // Blocking (waits up to `wait` for the store): the groups the config file declares are
  // created, or changed to match it; a group created through the API is left alone (logged);
  // a group no longer declared is managed through the API from now on. Returns how many failed
  // (each logged). At start, takeover and reload, never on a strand.
  int ApplyDeclared(const std::vector<AlignmentGroupSpec>& declared,
                    std::chrono::milliseconds wait);

  // Creates the group, or changes its policy. `from_config`: the config file declares it (only
  // the file may change such a group, and the file may not take over one the API made: both
  // FAILED_PRECONDITION). INVALID_ARGUMENT names the field a bad value is in; ABORTED while
  // another change of the group is being written.
  void Put(const AlignmentGroupUpdate& update, const PipelineDefaults& defaults, bool from_config,
           ViewDone done);
  std::optional<AlignmentGroupView> Get(const std::string& name) const;
  // Get, with what holds the group now (asked of its runner, on its strand): `done` there, or
  // at once (NOT_FOUND, or no runner).
  void Describe(const std::string& name, ViewDone done) const;
  std::vector<AlignmentGroupView> List() const;  // in name order
  // FAILED_PRECONDITION while a pipeline names it or the config file declares it; NOT_FOUND when
  // there is no such group.
  void Delete(const std::string& name, Done done);

  // A pipeline that names the group (create, load) joins it: its runner, with the group's
  // policy. FAILED_PRECONDITION when there is no such group (or it is being deleted), or it has
  // kMaxGroupMembers members already.
  struct Joined {
    std::shared_ptr<GroupRunner> runner;  // null without a RunnerFactory
    AlignmentGroupSpec spec;
  };
  Result<Joined> Join(const std::string& name, const PipelineKey& key);
  // Whether a pipeline naming `name` could join now (Join's checks, nothing changed).
  Status CheckJoin(const std::string& name) const;
  // The pipeline is gone (deleted): out of whichever group held it.
  void Leave(const PipelineKey& key);
  // A member whose own record could not be read (runtime/quarantine.h): it holds the group as a
  // member never ready, `why` its holdup, until Release. Nothing when there is no such group.
  void HoldFor(const std::string& name, const PipelineKey& key, const std::string& why);
  // That member is deleted: the group goes on without it.
  void Release(const std::string& name, const PipelineKey& key);
  // The runner of `name` (null: no such group, or no runners).
  std::shared_ptr<GroupRunner> Runner(const std::string& name) const;

 private:
  AlignmentGroupView ViewOf(const StoredGroup& group) const CKPT_REQUIRES(mu_);
  Status CheckJoinLocked(const std::string& name) const CKPT_REQUIRES(mu_);
  // Makes and starts the runner of a group new to this daemon, or gives the one there its spec.
  void SyncRunner(const StoredGroup& group) CKPT_REQUIRES(mu_);
  // False when a change of `name` is already being written (then refuse with Busy).
  bool BeginWrite(const std::string& name) CKPT_EXCLUDES(mu_);
  static Status Busy(const std::string& name);

  MetadataStore& store_;
  mutable Mutex mu_;
  std::map<std::string, StoredGroup> groups_ CKPT_GUARDED_BY(mu_);
  // Names with a Put or Delete in the store now: one change of a group at a time, so that two
  // changes of different fields never overwrite each other (the second is refused, ABORTED).
  std::set<std::string> writing_ CKPT_GUARDED_BY(mu_);
  std::map<std::string, std::set<PipelineKey>> members_ CKPT_GUARDED_BY(mu_);
  // Names whose DeleteGroup is in the store: nobody joins them.
  std::set<std::string> deleting_ CKPT_GUARDED_BY(mu_);
  std::set<std::string> unreadable_ CKPT_GUARDED_BY(mu_);  // SetUnreadable
  const RunnerFactory make_runner_;
  const int64_t max_groups_;
  DaemonMetrics* const metrics_;  // may be null; its counters are atomics
  std::map<std::string, std::shared_ptr<GroupRunner>> runners_ CKPT_GUARDED_BY(mu_);
};

}  // namespace ckpt
