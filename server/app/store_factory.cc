#include "app/store_factory.h"

#include "sqlite/sqlite_store.h"

namespace ckpt {

Result<std::unique_ptr<MetadataStore>> OpenConfiguredStore(const DaemonConfig& config) {
  if (config.store_backend == "sqlite") {
    auto opened = SqliteStore::Open(config.data_dir);
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<MetadataStore>(std::move(*opened));
  }
  return Status::InvalidArgument("unknown store backend " + config.store_backend);
}

}  // namespace ckpt
