#include "etcd/etcd_store.h"

namespace ckpt {

std::unique_ptr<EtcdStore> EtcdStore::Create(std::shared_ptr<EtcdClient> client,
                                             std::function<bool()> may_write,
                                             GroupCommitOptions options) {
  auto backend = std::make_unique<EtcdBackend>(std::move(client), std::move(may_write));
  EtcdBackend& raw = *backend;
  options.thread_name = "ckpt-etcd-store";
  return std::unique_ptr<EtcdStore>(new EtcdStore(std::move(backend), raw, std::move(options)));
}

}  // namespace ckpt
