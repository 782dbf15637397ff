#pragma once
// PipelineHost keeps the daemon's pipelines: one PipelineRunner per pipeline on the io shards, in
// a Registry; made from the store at start, from the API and from the config file; deleted; told
// when the store fails writes or takes them again (StoreHealth, which it owns).
//
// Threading: Load, ApplyDeclared and Shutdown are called from one controlling thread (never from
// an io_context thread), ApplyDeclared never beside another ApplyDeclared. Create blocks (it reads
// the id counter): call it from the blocking pool or the controlling thread, never on a strand.
// Everything else is safe from any thread. Callbacks (`done`) run on the store's writer thread or
// the caller's and must not block.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/restore_pins.h"
#include "core/round_admission.h"
#include "runtime/alignment_groups.h"
#include "runtime/blocking_work.h"
#include "runtime/daemon_metrics.h"
#include "runtime/io_shards.h"
#include "runtime/quarantine.h"
#include "runtime/registry.h"
#include "runtime/store_health.h"
#include "store/metadata_store.h"

namespace ckpt {

struct PipelineHostOptions {
  int64_t heartbeat_interval_ms = 3000;
  int64_t lease_ttl_ms = 10000;
  // CoordinatorOptions::start_spread: nullopt spreads over the interval, 0 not at all.
  std::optional<int64_t> start_spread_ms = 0;
  int64_t stuck_threshold_ms = 0;  // CoordinatorOptions::stuck_threshold_ms
  // Where savepoints go when a request names no target directory.
  std::string savepoint_root;
  // admission { max_concurrent_rounds, max_inflight_bytes }: the caps on rounds in flight across
  // every pipeline and group of the daemon (docs/PROTOCOL.md, "Admission"); reloadable.
  AdmissionCaps admission;
  // The config file that declares pipelines, for messages ("" when there is none).
  std::string config_source;
  // How often StoreHealth probes a store that fails writes.
  std::chrono::milliseconds store_probe_interval{1000};
  // Creates beyond max_pipelines, or of specs beyond the task and id limits, are refused;
  // pipelines loaded from the store at start are not (nothing stored is dropped).
  Limits limits;
};

// What applying the config file's pipelines did (ApplyDeclared, the daemon's reload); every item
// is also logged.
struct ReloadResult {
  std::vector<std::string> needs_restart;  // keys that changed but apply only at the next start
  int created = 0;                         // declared pipelines new to the daemon
  int updated = 0;                         // declared pipelines whose spec changed
  int unchanged = 0;
  int left_alone = 0;  // declared in the file, but created through the API
  int undeclared = 0;  // declared until now, no longer in the file: the API's from now on
  int failed = 0;      // refused (invalid, store error) or not done in time
};

class ReloadLatch;

class PipelineHost {
 public:
  using CreateDone = std::function<void(Result<std::shared_ptr<PipelineRunner>>)>;

  // Everything passed must outlive the host. `on_store_writable` runs on the control loop after
  // every runner was told (health reporting); it must not block.
  PipelineHost(IoShards& shards, MetadataStore& store, const Clock& clock, DaemonMetrics& metrics,
               PipelineHostOptions options, PipelineDefaults defaults,
               std::function<void(bool writable)> on_store_writable);
  ~PipelineHost();
  PipelineHost(const PipelineHost&) = delete;
  PipelineHost& operator=(const PipelineHost&) = delete;

  // Blocking. Loads every stored alignment group and applies the `declared_groups` (first: the
  // pipelines may name them; each write waits up to `group_wait`), then every stored pipeline,
  // creates or updates the `declared` ones (the config file's; one it creates restores from its
  // `restore_from` entry, and is left out, with an error, when that cannot be read), hands what
  // the file no longer declares to the API, and starts them all, members joined to their groups.
  Status Load(const std::vector<PipelineSpec>& declared,
              const std::map<PipelineKey, CheckpointRef>& restore_from = {},
              const std::vector<AlignmentGroupSpec>& declared_groups = {},
              std::chrono::milliseconds group_wait = std::chrono::seconds(10));

  // Creates a pipeline (spec validated) and starts it once its record is durable.
  // `from_config`: declared in the config file (a reload may update it later). Blocking.
  // `restore_from`: where it restores from until its first completion (PinRestoreSource took it;
  // a failed create lets it go).
  void Create(const PipelineSpec& spec, CreateDone done, bool from_config = false,
              std::optional<std::pair<CheckpointRef, CompletedCheckpoint>> restore_from = {});
  // Stops the pipeline and deletes its record and history (not its id counter); once that is
  // durable its streams get `release` of every checkpoint and end with NOT_FOUND, and `done`
  // runs. FAILED_PRECONDITION while one of its checkpoints is another pipeline's restore point
  // (its state would be released under it); its own restore point is no obstacle.
  void Delete(const std::shared_ptr<PipelineRunner>& runner, std::function<void(Status)> done);

  // Deletes a pipeline whose record could not be read (quarantine()): whatever is stored of it
  // goes, and its id counter is raised to the store's high-water mark. NOT_FOUND when it is not
  // quarantined. `done` on the store's writer thread.
  void DeleteUnreadable(const PipelineKey& key, std::function<void(Status)> done);
  // Deletes an alignment group whose record could not be read; its members, held with it, then
  // load and run outside any group (their records are read again: that part runs on writes()).
  // NOT_FOUND when it is not quarantined. `done` once the members run, or with why they could not
  // be loaded (then they load at the next start).
  void DeleteUnreadableGroup(const std::string& name, std::function<void(Status)> done);

  // RestorePipeline: `from` (checkpoint_id 0: the source's newest completed) becomes `target`'s
  // restore point (PipelineCoordinator::Restore has the rules). Blocking (it reads the source's
  // checkpoint): call it from writes(). `done` once durable or refused; it runs on a strand or
  // the calling thread and must not block.
  void Restore(const std::shared_ptr<PipelineRunner>& target, CheckpointRef from,
               std::function<void(Status, const PipelineStatus&)> done);
  // A declared pipeline's restore_from: reads and pins `from` (as Restore) for `holder`, for
  // Create. Blocking, also on the source's strand: the controlling thread or writes() (both run
  // only while the strands do: JoinBlockingPool comes before the io threads stop).
  Result<std::pair<CheckpointRef, CompletedCheckpoint>> PinRestoreSource(CheckpointRef from,
                                                                         const PipelineKey& holder);
  // The same without waiting for the source's strand: reads `from` (blocking: call it from the
  // write work's thread), then `done` runs on the source's strand once it is pinned or refused
  // (it must not block; blocking work that follows goes back to writes()).
  using PinDone = std::function<void(Result<std::pair<CheckpointRef, CompletedCheckpoint>>)>;
  void PinRestoreSourceAsync(CheckpointRef from, const PipelineKey& holder, PinDone done);
  // Lets go of a pin PinRestoreSource took for `holder` that was not used.
  void UnpinRestoreSource(const CheckpointRef& ref, const PipelineKey& holder);

  // A reload's pipelines: the declared ones created or updated, API ones left alone, the ones no
  // longer declared handed to the API. Waits up to `wait` (or until CancelApplyDeclared) for the
  // changes; those not done by then count as failed (they may still finish later). Blocking.
  ReloadResult ApplyDeclared(const std::vector<PipelineSpec>& declared,
                             std::chrono::steady_clock::duration wait,
                             const std::map<PipelineKey, CheckpointRef>& restore_from = {});
  // Ends an ApplyDeclared's wait now, and every later one's at once (shutdown). Any thread.
  void CancelApplyDeclared();

  // Defaults for pipelines created from now on (the API's and the file's).
  PipelineDefaults defaults() const;
  void SetDefaults(const PipelineDefaults& defaults);

  Registry& registry() { return registry_; }
  // The pipelines and groups whose records the store could not read (runtime/quarantine.h).
  const Quarantine& quarantine() const { return quarantine_; }
  AlignmentGroups& groups() { return groups_; }
  const Registry& registry() const { return registry_; }
  bool store_writable() const { return store_health_.writable(); }
  std::string why_store_not_writable() const { return store_health_.WhyNotWritable(); }
  // Reports a store write's outcome to the store's health (the create path's, and the daemon's).
  void ReportStoreWrite(const Status& status) { store_health_.Report(status); }

  // Operator work that blocks, on threads of its own: store reads for viewers (reads()), and
  // creates and restores (writes()), so that a viewer reading in a loop delays no create.
  BlockingWork& reads() { return reads_; }
  BlockingWork& writes() { return writes_; }

  // Shutdown, in this order, from the controlling thread: RefuseCreates first (no pipeline appears
  // that shutdown would not know of: a create from now on is UNAVAILABLE, one already writing its
  // record starts shut down), later StopProbing (no store probes after the store's last flush),
  // then JoinBlockingPool.
  void RefuseCreates() { refusing_creates_.store(true); }
  // The daemon's admission: its gauges for /metrics, its caps for a reload. Any thread.
  RoundAdmission& admission() { return *admission_; }
  void StopProbing() { store_health_.Stop(); }
  void JoinBlockingPool() {
    reads_.Join();
    writes_.Join();
  }

 private:
  std::shared_ptr<PipelineRunner> MakeRunner(const StoredPipeline& stored, bool restarted);
  // A new group runner's coordinator options: the start spread and the next start slot.
  GroupOptions MakeGroupOptions();
  // options_.start_spread_ms as the coordinators take it.
  std::optional<Millis> StartSpread() const;
  // Reads `from`'s checkpoint (the newest when its id is 0) from the store. Blocking.
  Result<CompletedCheckpoint> ReadRestoreSource(const CheckpointRef& from);
  // An operator-set restore point of a stored pipeline: `source` is adopted (true), or, when it
  // cannot be read, the pipeline restores from its own newest checkpoint (said in the log). The
  // caller pins what was adopted.
  bool AdoptRestoreSource(const PipelineKey& key, StoredPipeline& p,
                          Result<CompletedCheckpoint> source);
  // Starts the members held for `group`, which is gone (DeleteUnreadableGroup), from the records
  // Load kept. Blocking (their restore points are pinned on their sources' strands): writes()
  // only.
  Status ReleaseMembersOf(const std::string& group);
  // A PinDropped: the source pipeline is told, if it still exists.
  void PinDropped(const CheckpointRef& ref);
  // StoreHealth's news (control loop): every pipeline holds or resumes its triggers.
  void OnStoreWritable(bool writable);

  IoShards& shards_;
  MetadataStore& store_;
  const Clock& clock_;
  DaemonMetrics& metrics_;
  const PipelineHostOptions options_;
  const std::function<void(bool)> on_store_writable_;
  StoreHealth store_health_;  // its probe timer is on shards_.control()
  // Shared by every runner and group runner (which hold it: a runner leaves it when destroyed).
  const std::shared_ptr<RoundAdmission> admission_;
  // Shared by every runner; it points at the members above, and at this host (PinDropped).
  const std::shared_ptr<const RunnerContext> runner_context_;
  Registry registry_;
  Quarantine quarantine_;
  // Loaded with the pipelines (Load); each group's runner on the shard its name falls to.
  AlignmentGroups groups_{store_,
                          [this](const StoredGroup& group) {
                            return std::make_shared<GroupRunner>(
                                shards_.For(PipelineKey{"", group.spec.name}), group, store_,
                                clock_, metrics_, &store_health_, MakeGroupOptions());
                          },
                          options_.limits.max_pipelines, &metrics_};
  RestorePins pins_;  // the restore points operators set; every coordinator consults it
  std::atomic<bool> refusing_creates_{false};  // any thread; set once, by RefuseCreates
  // The next runner's start slot (CoordinatorOptions::start_spread): runners are made in the
  // order Load sorts them, then as created. Any thread.
  std::atomic<uint64_t> next_start_slot_{0};
  // Keys whose Create is between its registry check and its registry Add (the store write in
  // between): a second create of the same key is refused instead of overwriting the first one's
  // stored record. creating_mu_ is held only for a set lookup.
  Mutex creating_mu_;
  // The records of the members held for an unreadable group (Load), started once the group is
  // deleted (ReleaseMembersOf, writes()). Nothing writes them meanwhile: they are quarantined.
  Mutex held_mu_;
  std::map<PipelineKey, StoredPipeline> held_members_ CKPT_GUARDED_BY(held_mu_);
  std::set<PipelineKey> creating_ CKPT_GUARDED_BY(creating_mu_);
  mutable Mutex defaults_mu_;
  PipelineDefaults defaults_ CKPT_GUARDED_BY(defaults_mu_);
  Mutex reload_mu_;
  std::weak_ptr<ReloadLatch> active_reload_ CKPT_GUARDED_BY(reload_mu_);  // the wait going on now
  bool reload_cancelled_ CKPT_GUARDED_BY(reload_mu_) = false;             // no wait any more
  // At most this many tasks wait for each (a client's calls are bounded by
  // limits.max_admin_calls_per_peer; this bounds all clients together).
  static constexpr size_t kMaxBlockingWaiting = 1024;
  BlockingWork reads_{kMaxBlockingWaiting};
  BlockingWork writes_{kMaxBlockingWaiting};
};

}  // namespace ckpt
