// The MetadataStore contract (unit/metadata_store_contract.h) held against the etcd backend, on
// the shared etcd of etcd_store_fixture.h: what SQLite and the in-memory backend pass, etcd must.
#include <gtest/gtest.h>

#include "../unit/metadata_store_contract.h"
#include "etcd_store_fixture.h"
#include "support/etcd_cluster.h"

namespace ckpt {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Etcd, MetadataStoreContract,
    ::testing::Values(Backend{"etcd",
                              [](const fs::path& dir) -> std::unique_ptr<GroupCommitStore> {
                                if (!testing::EtcdCluster::Installed()) return nullptr;
                                return OpenSharedFenced("/contract/" + dir.filename().string());
                              }}),
    [](const ::testing::TestParamInfo<Backend>& info) { return info.param.name; });

}  // namespace
}  // namespace ckpt
