#include "app/store_factory.h"

#include "sqlite/sqlite_store.h"

namespace ckpt {

Result<std::unique_ptr<MetadataStore>> OpenConfiguredStore(const DaemonConfig& config) {
  if (config.store_backend == "sqlite") {
    SqliteStoreOptions options;
    options.writer_nice = config.store_writer_nice;
    auto opened = SqliteStore::Open(config.data_dir, std::move(options));
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<MetadataStore>(std::move(*opened));
  }
  return Status::InvalidArgument("unknown store backend " + config.store_backend);
}

}  // namespace ckpt
