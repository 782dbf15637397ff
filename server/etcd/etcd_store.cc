#include "etcd/etcd_store.h"

namespace ckpt {

std::unique_ptr<EtcdStore> EtcdStore::Create(std::shared_ptr<EtcdClient> client,
                                             std::function<bool()> may_write) {
  auto backend = std::make_unique<EtcdBackend>(std::move(client), std::move(may_write));
  EtcdBackend& raw = *backend;
  return std::unique_ptr<EtcdStore>(new EtcdStore(std::move(backend), raw));
}

}  // namespace ckpt
