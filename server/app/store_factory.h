#pragma once
// The store backend the config names (store.backend), opened in data_dir. The one place that
// knows every backend.

#include <memory>

#include "common/status.h"
#include "config/daemon_config.h"
#include "store/metadata_store.h"

namespace ckpt {

// Blocking. INVALID_ARGUMENT for a backend this build does not have; otherwise the backend's
// own errors (DATA_LOSS for a damaged or foreign store, ...).
Result<std::unique_ptr<MetadataStore>> OpenConfiguredStore(const DaemonConfig& config);

}  // namespace ckpt
