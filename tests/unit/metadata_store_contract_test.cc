// The MetadataStore contract (metadata_store_contract.h) over the SQLite store and
// GroupCommitStore over the in-memory test backend. The etcd backend's instance is an integration
// test (it needs a running etcd).
#include "metadata_store_contract.h"

#include "sqlite/sqlite_store.h"
#include "support/memory_backend.h"

namespace ckpt {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Backends, MetadataStoreContract,
    ::testing::Values(Backend{"sqlite",
                              [](const fs::path& dir) -> std::unique_ptr<GroupCommitStore> {
                                auto store = SqliteStore::Open(dir.string());
                                if (!store.ok()) return nullptr;
                                return std::move(*store);
                              }},
                      Backend{"memory",
                              [](const fs::path&) {
                                return std::make_unique<GroupCommitStore>(
                                    std::make_unique<MemoryBackend>(), GroupCommitOptions{});
                              }}),
    [](const ::testing::TestParamInfo<Backend>& info) { return info.param.name; });

}  // namespace
}  // namespace ckpt
