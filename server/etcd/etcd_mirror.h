#pragma once
// A standby's copy of what a takeover loads, kept warm by a watch, so that taking over does not
// read the whole prefix again (issue: "a standby keeps itself warm").
//
// StoreImage is what EtcdBackend builds its view from: the pipeline records, the id counters,
// the checkpoint keys with their mod revisions, and the value of each pipeline's newest
// checkpoint write (etcd_layout.h: it holds that pipeline's progress and where its history
// starts). EtcdBackend::ReadImage reads one from etcd; EtcdMirror keeps one up to date.
//
// EtcdMirror loads an image (with the backend's ReadImage), then watches the whole prefix from
// the next revision and applies every event. At takeover, Take(W) hands the image over once it
// reflects every write up to W, the mod revision of the write cursor P/writer read then: every
// fenced txn of every leader rewrites P/writer, and etcd delivers a revision's events together
// on one watch, so an image that has seen P/writer at W has seen all of those txns. Anything else
// (not loaded or not caught up within the wait, the newest value of a pipeline gone while older
// keys of it stayed) and Take returns nothing: the caller reads etcd as before. A compacted or
// broken watch loads the image again (after a pause that doubles while it keeps failing). The
// watch carries etcd's "hasleader" requirement, so a member cut off from its cluster ends it
// instead of leaving it silent.
//
// Threading: its own thread reads the watch; Start, Take and the destructor on any one other
// thread. The image is guarded by mu_.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_layout.h"

namespace ckpt::etcd {

struct StoreImage {
  int64_t revision = 0;                              // reflects every write up to this one
  int64_t writer_revision = 0;                       // P/writer's mod revision (0: never written)
  std::vector<etcdserverpb::KeyValue> records;       // P/pipelines/..., with values, in key order
  std::vector<etcdserverpb::KeyValue> counters;      // P/counters/..., with values, in key order
  std::vector<etcdserverpb::KeyValue> history;       // P/checkpoints/..., keys only, in key order
  std::map<std::string, std::string> newest_values;  // key -> value of each pipeline's newest
  std::optional<std::string> layout;                 // P/layout's value
  std::optional<std::string> high_water;             // P/high_water's value
  // Every other key under the prefix but chunks (election keys, groups, singletons, and keys no
  // ckptd wrote), keys only, in key order: a load says which ones it does not know.
  std::vector<std::string> others;
};

// Why `kv` (a pipeline record, id counter, checkpoint or group value, as a load reads it) cannot
// be read ("" when it can). A check of the one value; a load checks more (etcd_backend.h).
std::string WhyUnreadable(const Layout& layout, const etcdserverpb::KeyValue& kv);

// Each pipeline's newest checkpoint write among `history` (in key order): the greatest mod
// revision, and of one txn's keys (one revision) the highest id. Nothing for a key that is not a
// checkpoint key.
std::optional<std::map<PipelineKey, const etcdserverpb::KeyValue*>> NewestCheckpoints(
    const Layout& layout, const std::vector<etcdserverpb::KeyValue>& history);

class EtcdMirror {
 public:
  using Loader = std::function<Result<StoreImage>()>;

  EtcdMirror(std::shared_ptr<EtcdClient> client, Layout layout, Loader load);
  ~EtcdMirror();  // stops the thread
  EtcdMirror(const EtcdMirror&) = delete;
  EtcdMirror& operator=(const EtcdMirror&) = delete;

  void Start();
  // Stops the mirror; its image when, within `wait`, it has loaded, seen P/writer at
  // `writer_revision` or later, and holds every pipeline's newest value; else nothing.
  std::optional<StoreImage> Take(int64_t writer_revision, std::chrono::milliseconds wait);

  // Images loaded and watch events applied so far (tests).
  uint64_t loads() const;
  uint64_t events_applied() const;
  // Records the watch brought that cannot be read, and keys no ckptd writes, held now: each is
  // logged once as it arrives (a standby reports them before any failover; a takeover would
  // quarantine them), and counted in ckptd_store_unreadable_records.
  size_t unreadable() const;

 private:
  // A checkpoint key's value is kept only while it is its pipeline's newest write.
  struct Newest {
    std::string key;
    int64_t mod_revision = 0;
  };

  void Run();
  // Replaces the copy with `image`.
  void Install(StoreImage image) CKPT_REQUIRES(mu_);
  // Takes what it keeps out of `event` (the values move, nothing is copied).
  void Apply(etcdserverpb::Event& event) CKPT_REQUIRES(mu_);
  void Stop();
  StoreImage Snapshot() const CKPT_REQUIRES(mu_);

  const std::shared_ptr<EtcdClient> client_;
  const Layout layout_;
  const Loader load_;
  std::thread thread_;

  mutable Mutex mu_;
  CondVar changed_;
  bool stopping_ CKPT_GUARDED_BY(mu_) = false;
  bool loaded_ CKPT_GUARDED_BY(mu_) = false;
  bool loading_ CKPT_GUARDED_BY(mu_) = false;                       // a load (the loader) under way
  EtcdClient::WatchStream* stream_ CKPT_GUARDED_BY(mu_) = nullptr;  // the one being read
  int64_t revision_ CKPT_GUARDED_BY(mu_) = 0;
  int64_t writer_revision_ CKPT_GUARDED_BY(mu_) = 0;
  std::map<std::string, etcdserverpb::KeyValue> records_ CKPT_GUARDED_BY(mu_);
  std::map<std::string, etcdserverpb::KeyValue> counters_ CKPT_GUARDED_BY(mu_);
  std::map<std::string, etcdserverpb::KeyValue> history_ CKPT_GUARDED_BY(mu_);  // no values
  std::map<PipelineKey, Newest> newest_ CKPT_GUARDED_BY(mu_);
  std::map<std::string, std::string> newest_values_ CKPT_GUARDED_BY(mu_);
  std::optional<std::string> layout_value_ CKPT_GUARDED_BY(mu_);
  std::optional<std::string> high_water_ CKPT_GUARDED_BY(mu_);
  std::map<std::string, etcdserverpb::KeyValue> others_ CKPT_GUARDED_BY(mu_);  // no values
  // Keys whose latest value cannot be read (or which no ckptd writes), with why.
  std::map<std::string, std::string> unreadable_ CKPT_GUARDED_BY(mu_);
  // What was logged about each (key, why): a copy read again says nothing new again. Bounded.
  std::set<std::pair<std::string, std::string>> said_ CKPT_GUARDED_BY(mu_);
  // Checks `kv` as it arrives, logs what cannot be read once, and keeps unreadable_ current.
  void Check(const etcdserverpb::KeyValue& kv, bool put) CKPT_REQUIRES(mu_);
  uint64_t loads_ CKPT_GUARDED_BY(mu_) = 0;
  uint64_t events_ CKPT_GUARDED_BY(mu_) = 0;
};

}  // namespace ckpt::etcd
