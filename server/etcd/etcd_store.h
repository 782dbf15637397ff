#pragma once
// EtcdStore: the MetadataStore of store.backend etcd. It is a GroupCommitStore (the queue,
// batching and pacing, the writer thread, fail-stop) over an EtcdBackend (fenced transactions,
// the layout, reads); this file puts the two together, as sqlite/sqlite_store.h does for SQLite.
// Threading and failure policy: those of GroupCommitStore and EtcdBackend.

#include <functional>
#include <memory>

#include "etcd/etcd_backend.h"
#include "store/group_commit_store.h"

namespace ckpt {

class EtcdStore final : public GroupCommitStore {
 public:
  // `may_write`: EtcdBackend's (the election's LeaseConfirmed). Connects nothing yet. `options`:
  // GroupCommitStore's (its default on_fatal exits the process: fail-stop).
  static std::unique_ptr<EtcdStore> Create(std::shared_ptr<EtcdClient> client,
                                           std::function<bool()> may_write,
                                           GroupCommitOptions options = {});

  // The backend, for SetFence at takeover. Lives as long as the store.
  EtcdBackend& backend() { return backend_; }

 private:
  EtcdStore(std::unique_ptr<EtcdBackend> backend, EtcdBackend& raw, GroupCommitOptions options)
      : GroupCommitStore(std::move(backend), std::move(options)), backend_(raw) {}

  EtcdBackend& backend_;
};

}  // namespace ckpt
