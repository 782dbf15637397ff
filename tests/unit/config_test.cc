// ParseDaemonConfig and LoadDaemonConfig on valid configs: every key read, the defaults and what
// pipelines and alignment groups inherit of them, and the file's own checks (a missing file, a
// directory, a bounded size, the shipped examples). Broken configs: config_errors_test.cc.
#include "config/daemon_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace ckpt {
namespace {

DaemonConfig ParseOk(const std::string& yaml) {
  Result<DaemonConfig> result = ParseDaemonConfig(yaml, "test.yaml");
  EXPECT_TRUE(result.ok()) << result.status().ToString() << "\nfor:\n" << yaml;
  return result.ok() ? *result : DaemonConfig{};
}

std::vector<std::string> Range(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Valid configs.

TEST(ConfigParse, EmptyFileMeansAllDefaults) {
  const DaemonConfig expected;
  for (const char* yaml : {"", "\n\n", "# only a comment\n# and another\n", "---\n", "{}\n"}) {
    SCOPED_TRACE(yaml);
    DaemonConfig config = ParseOk(yaml);
    EXPECT_EQ(config.listen, "127.0.0.1:7070");
    EXPECT_EQ(config.metrics_listen, "127.0.0.1:9464");
    EXPECT_EQ(config.data_dir, "./ckptd-data");
    EXPECT_EQ(config.store_backend, "sqlite");
    EXPECT_EQ(config.threads, 0);
    EXPECT_EQ(config.lease_ttl_ms, 10000);
    EXPECT_EQ(config.heartbeat_interval_ms, 3000);
    EXPECT_EQ(config.shutdown_grace_ms, 10000);
    EXPECT_FALSE(config.start_spread_ms.has_value()) << "unset: the whole interval";
    EXPECT_FALSE(config.admission.any()) << "no admission caps";
    EXPECT_EQ(config.log_level, "info");
    EXPECT_EQ(config.log_format, "text");
    EXPECT_FALSE(config.metrics_per_pipeline);
    EXPECT_FALSE(config.metrics_web_view.has_value());
    EXPECT_TRUE(WebViewOn(config)) << "on loopback without auth";
    EXPECT_EQ(config.defaults.interval_ms, 10000);
    EXPECT_EQ(config.defaults.timeout_ms, 600000);
    EXPECT_EQ(config.defaults.min_pause_ms, 0);
    EXPECT_EQ(config.defaults.tolerable_failures, 0);
    EXPECT_EQ(config.defaults.retained, 10);
    EXPECT_TRUE(config.pipelines.empty());
  }
}

TEST(ConfigParse, ReadsEveryTopLevelKey) {
  DaemonConfig config = ParseOk(
      "listen: 0.0.0.0:7171\n"
      "insecure: true\n"
      "metrics_listen: \"[::1]:9000\"\n"
      "data_dir: /var/lib/ckptd\n"
      "savepoint_root: s3://bucket/savepoints\n"
      "store:\n"
      "  backend: sqlite\n"
      "threads: 4\n"
      "lease_ttl_ms: 20000\n"
      "heartbeat_interval_ms: 5000\n"
      "shutdown_grace_ms: 0\n"
      "start_spread_ms: 250\n"
      "hello_timeout_ms: 1500\n"
      "log:\n"
      "  level: debug\n"
      "  format: json\n"
      "metrics:\n"
      "  per_pipeline: true\n"
      "admission:\n"
      "  max_concurrent_rounds: 500\n"
      "  max_inflight_bytes: 1000000000\n");
  EXPECT_EQ(config.listen, "0.0.0.0:7171");
  EXPECT_EQ(config.admission.max_concurrent_rounds, 500);
  EXPECT_EQ(config.admission.max_inflight_bytes, 1000000000);
  EXPECT_EQ(config.metrics_listen, "[::1]:9000");
  EXPECT_EQ(config.data_dir, "/var/lib/ckptd");
  EXPECT_EQ(config.savepoint_root, "s3://bucket/savepoints");
  EXPECT_EQ(config.store_backend, "sqlite");
  EXPECT_EQ(config.threads, 4);
  EXPECT_EQ(config.lease_ttl_ms, 20000);
  EXPECT_EQ(config.heartbeat_interval_ms, 5000);
  EXPECT_EQ(config.shutdown_grace_ms, 0);
  EXPECT_EQ(config.start_spread_ms, 250);
  EXPECT_EQ(config.hello_timeout_ms, 1500);
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_EQ(config.log_format, "json");
  EXPECT_TRUE(config.metrics_per_pipeline);
}

TEST(ConfigParse, ReadsTheEtcdSection) {
  const std::string head =
      "advertise: 10.0.0.5:7070\n"
      "store:\n"
      "  backend: etcd\n"
      "  etcd:\n"
      "    endpoints: [http://10.0.0.1:2379, http://10.0.0.2:2379]\n";
  DaemonConfig defaults = ParseOk(head);
  EXPECT_EQ(defaults.etcd.max_txn_ops, 128);  // etcd's own default
  EXPECT_EQ(defaults.etcd.prefix, "/ckptd");
  DaemonConfig config = ParseOk(head +
                                "    prefix: /ckptd/prod\n"
                                "    election_ttl_ms: 3000\n"
                                "    request_timeout_ms: 2000\n"
                                "    max_txn_ops: 1024\n");
  EXPECT_EQ(config.store_backend, "etcd");
  EXPECT_EQ(config.etcd.endpoints,
            (std::vector<std::string>{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}));
  EXPECT_EQ(config.etcd.prefix, "/ckptd/prod");
  EXPECT_EQ(config.etcd.election_ttl_ms, 3000);
  EXPECT_EQ(config.etcd.request_timeout_ms, 2000);
  EXPECT_EQ(config.etcd.max_txn_ops, 1024);
}

TEST(ConfigParse, ReadsTheStoreWriterNiceValue) {
  EXPECT_EQ(ParseOk("").store_writer_nice, -10);
  EXPECT_EQ(ParseOk("store:\n  writer_nice: 0\n").store_writer_nice, 0);
  EXPECT_EQ(ParseOk("store:\n  backend: sqlite\n  writer_nice: -20\n").store_writer_nice, -20);
  EXPECT_EQ(ParseOk("store: {writer_nice: 19}\n").store_writer_nice, 19);
}

TEST(ConfigParse, EmptyMetricsListenTurnsTheHttpServerOff) {
  EXPECT_EQ(ParseOk("metrics_listen: \"\"\n").metrics_listen, "");
  EXPECT_EQ(ParseOk("metrics_listen: ''\n").metrics_listen, "");
  EXPECT_EQ(ParseOk("metrics_listen: 127.0.0.1:0\n").metrics_listen, "127.0.0.1:0");
}

TEST(ConfigParse, BooleansInAnyCase) {
  EXPECT_TRUE(ParseOk("metrics: {per_pipeline: True}\n").metrics_per_pipeline);
  EXPECT_TRUE(ParseOk("metrics: {per_pipeline: TRUE}\n").metrics_per_pipeline);
  EXPECT_FALSE(ParseOk("metrics: {per_pipeline: false}\n").metrics_per_pipeline);
  EXPECT_FALSE(ParseOk("metrics:\n").metrics_per_pipeline);
  const DaemonConfig off = ParseOk("metrics: {web_view: false}\n");
  EXPECT_EQ(off.metrics_web_view, false);
  EXPECT_FALSE(WebViewOn(off));
  EXPECT_FALSE(off.metrics_per_pipeline) << "one key does not set the other";
  EXPECT_FALSE(ParseOk("metrics: {per_pipeline: true}\n").metrics_web_view.has_value());
}

TEST(ConfigParse, TheWebViewIsOnByDefaultOnlyOnLoopbackWithoutAuth) {
  DaemonConfig config;
  EXPECT_TRUE(WebViewOn(config));
  config.metrics_listen = "0.0.0.0:9464";
  EXPECT_FALSE(WebViewOn(config)) << "reachable from other machines";
  config.metrics_web_view = true;
  EXPECT_TRUE(WebViewOn(config)) << "asked for";
  DaemonConfig with_auth;
  with_auth.auth.enabled = true;
  EXPECT_FALSE(WebViewOn(with_auth)) << "callers authenticate: the view would bypass that";
  with_auth.metrics_web_view = true;
  EXPECT_TRUE(WebViewOn(with_auth));
}

TEST(ConfigParse, EmptySectionsAreAllowed) {
  // A section whose keys are all commented out is null in YAML: it means "all defaults".
  DaemonConfig config = ParseOk("store:\nlog:\ndefaults:\n  # interval_ms: 10000\npipelines:\n");
  EXPECT_EQ(config.store_backend, "sqlite");
  EXPECT_EQ(config.log_level, "info");
  EXPECT_EQ(config.defaults.interval_ms, 10000);
  EXPECT_TRUE(config.pipelines.empty());
}

TEST(ConfigParse, PipelinesInheritDefaultsAndOverrideThem) {
  // `defaults` comes after `pipelines` on purpose: order in the file must not matter.
  DaemonConfig config = ParseOk(
      "pipelines:\n"
      "  - job_id: etl\n"
      "    pipeline_id: ingest\n"
      "    task_ids: [reader, \"writer\", 7]\n"
      "    timeout_ms: 30000\n"
      "    retained: 3\n"
      "  - job_id: etl\n"
      "    pipeline_id: enrich\n"
      "    parallelism: 3\n"
      "defaults:\n"
      "  interval_ms: 2000\n"
      "  min_pause_ms: 500\n"
      "  tolerable_failures: 2\n"
      "  retained: 20\n");
  ASSERT_EQ(config.pipelines.size(), 2u);
  const PipelineSpec& ingest = config.pipelines[0];
  EXPECT_EQ(ingest.key, (PipelineKey{"etl", "ingest"}));
  EXPECT_EQ(ingest.task_ids, (std::vector<std::string>{"reader", "writer", "7"}));
  EXPECT_EQ(ingest.interval_ms, 2000);
  EXPECT_EQ(ingest.timeout_ms, 30000);
  EXPECT_EQ(ingest.min_pause_ms, 500);
  EXPECT_EQ(ingest.tolerable_failures, 2);
  EXPECT_EQ(ingest.retained, 3);

  const PipelineSpec& enrich = config.pipelines[1];
  EXPECT_EQ(enrich.key, (PipelineKey{"etl", "enrich"}));
  EXPECT_EQ(enrich.task_ids, Range(3));
  EXPECT_EQ(enrich.interval_ms, 2000);
  EXPECT_EQ(enrich.timeout_ms, 600000);  // the built-in default: `defaults` left it out
  EXPECT_EQ(enrich.min_pause_ms, 500);
  EXPECT_EQ(enrich.tolerable_failures, 2);
  EXPECT_EQ(enrich.retained, 20);
  EXPECT_EQ(config.defaults.interval_ms, 2000);
}

TEST(ConfigParse, AlignmentGroupsInheritTheDefaultsTheyLeaveOut) {
  auto config = ParseDaemonConfig(
      "defaults: {interval_ms: 7000, min_pause_ms: 50}\n"
      "alignment_groups:\n"
      "  - {name: ledger, position_interval: 100}\n"
      "  - {name: blocks, interval_ms: 2000, timeout_ms: 9000}\n",
      "test.yaml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->alignment_groups.size(), 2u);
  const AlignmentGroupSpec& ledger = config->alignment_groups[0];
  EXPECT_EQ(ledger.name, "ledger");
  EXPECT_EQ(ledger.interval_ms, 7000);
  EXPECT_EQ(ledger.min_pause_ms, 50);
  EXPECT_EQ(ledger.timeout_ms, PipelineDefaults{}.timeout_ms);
  EXPECT_EQ(ledger.position_interval, 100);
  const AlignmentGroupSpec& blocks = config->alignment_groups[1];
  EXPECT_EQ(blocks.interval_ms, 2000);
  EXPECT_EQ(blocks.timeout_ms, 9000);
  EXPECT_EQ(blocks.position_interval, 0);
}

TEST(ConfigParse, APipelineNamesItsAlignmentGroup) {
  DaemonConfig config = ParseOk(
      "pipelines:\n"
      "  - {job_id: j, pipeline_id: a, parallelism: 1, alignment_group: ledger}\n"
      "  - {job_id: j, pipeline_id: b, parallelism: 1}\n");
  ASSERT_EQ(config.pipelines.size(), 2u);
  EXPECT_EQ(config.pipelines[0].alignment_group, "ledger");
  EXPECT_EQ(config.pipelines[1].alignment_group, "") << "none unless named";
  auto bad = ParseDaemonConfig(
      "pipelines: [{job_id: j, pipeline_id: a, parallelism: 1, alignment_group: [x]}]\n",
      "test.yaml");
  EXPECT_FALSE(bad.ok());
}

TEST(ConfigParse, ParallelismNamesTasksFromZero) {
  DaemonConfig config = ParseOk("pipelines: [{job_id: j, pipeline_id: p, parallelism: 12}]\n");
  ASSERT_EQ(config.pipelines.size(), 1u);
  EXPECT_EQ(config.pipelines[0].task_ids, Range(12));
  EXPECT_EQ(config.pipelines[0].task_ids.back(), "11");
}

TEST(ConfigParse, RestoreFromIsKeptBesideTheSpecOfItsPipeline) {
  DaemonConfig config = ParseOk(
      "pipelines:\n"
      "  - {job_id: j2, pipeline_id: p, parallelism: 1,\n"
      "     restore_from: {job_id: j1, pipeline_id: p, checkpoint_id: 42}}\n"
      "  - {job_id: j3, pipeline_id: p, parallelism: 1, restore_from: {job_id: j1, pipeline_id: "
      "p}}\n"
      "  - {job_id: j4, pipeline_id: p, parallelism: 1}\n");
  ASSERT_EQ(config.pipelines.size(), 3u);
  const std::map<PipelineKey, CheckpointRef> expected = {
      {{"j2", "p"}, {{"j1", "p"}, 42}},
      {{"j3", "p"}, {{"j1", "p"}, 0}},  // the newest, when it is created
  };
  EXPECT_EQ(config.pipeline_restore_from, expected);
}

TEST(ConfigParse, SamePipelineIdInDifferentJobsIsFine) {
  DaemonConfig config = ParseOk(
      "pipelines:\n"
      "  - {job_id: a, pipeline_id: p, parallelism: 1}\n"
      "  - {job_id: b, pipeline_id: p, parallelism: 1}\n");
  EXPECT_EQ(config.pipelines.size(), 2u);
}

TEST(ConfigParse, AcceptsBoundaryValues) {
  DaemonConfig config = ParseOk(
      "threads: 256\n"
      "listen: localhost:0\n"
      "metrics_listen: 127.0.0.1:65535\n"
      "lease_ttl_ms: 2\n"
      "heartbeat_interval_ms: 1\n"
      "defaults: {interval_ms: 10, timeout_ms: 1, min_pause_ms: 0, retained: 1}\n"
      "pipelines: [{job_id: j, pipeline_id: p, parallelism: +1, tolerable_failures: 0}]\n"
      "---\n");
  EXPECT_EQ(config.threads, 256);
  EXPECT_EQ(config.listen, "localhost:0");
  EXPECT_EQ(config.lease_ttl_ms, 2);
  EXPECT_EQ(config.heartbeat_interval_ms, 1);
  ASSERT_EQ(config.pipelines.size(), 1u);
  EXPECT_EQ(config.pipelines[0].interval_ms, 10);
  EXPECT_EQ(config.pipelines[0].retained, 1);
  EXPECT_EQ(config.pipelines[0].task_ids, Range(1));
}

TEST(ConfigParse, AnchorsAndAliasesWork) {
  DaemonConfig config = ParseOk(
      "defaults: {interval_ms: &fast 1000}\n"
      "pipelines:\n"
      "  - {job_id: j, pipeline_id: p, task_ids: &tasks [a, b], timeout_ms: *fast}\n"
      "  - {job_id: j, pipeline_id: q, task_ids: *tasks}\n");
  ASSERT_EQ(config.pipelines.size(), 2u);
  EXPECT_EQ(config.pipelines[0].timeout_ms, 1000);
  EXPECT_EQ(config.pipelines[1].task_ids, (std::vector<std::string>{"a", "b"}));
}

// ---------------------------------------------------------------------------------------------
// Files.

TEST(ConfigLoad, MissingFileIsAnErrorNamingThePath) {
  const std::string path = ::testing::TempDir() + "/ckptd-config-test-no-such-file.yaml";
  Result<DaemonConfig> result = LoadDaemonConfig(path);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
  EXPECT_NE(result.status().message().find(path), std::string::npos);
}

TEST(ConfigLoad, DirectoryIsAnError) {
  Result<DaemonConfig> result = LoadDaemonConfig(::testing::TempDir());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
}

TEST(ConfigLoad, OnlyARegularFileOfBoundedSizeIsRead) {
  // A FIFO would block the reader (the signal thread at SIGHUP): refused at once.
  const std::string fifo = ::testing::TempDir() + "/ckptd-config-test-fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<DaemonConfig> result = LoadDaemonConfig(fifo);
  std::remove(fifo.c_str());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("not a regular file"), std::string::npos)
      << result.status().message();
  // A device that never ends.
  result = LoadDaemonConfig("/dev/zero");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("not a regular file"), std::string::npos);
  // A file far larger than any config.
  const std::string big = ::testing::TempDir() + "/ckptd-config-test-big.yaml";
  {
    std::ofstream out(big);
    const std::string comment = "# " + std::string(1022, 'x') + "\n";
    for (uint64_t written = 0; written <= kMaxConfigBytes; written += comment.size())
      out << comment;
  }
  result = LoadDaemonConfig(big);
  std::remove(big.c_str());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("larger than 16 MiB"), std::string::npos)
      << result.status().message();
}

TEST(ConfigLoad, ErrorsNameTheFile) {
  const std::string path = ::testing::TempDir() + "/ckptd-config-test-broken.yaml";
  {
    std::ofstream out(path);
    out << "threads: 1\nthreds: 2\n";
  }
  Result<DaemonConfig> result = LoadDaemonConfig(path);
  std::remove(path.c_str());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            path + ":2:1: unknown key 'threds' at the top level; did you mean 'threads'?");
}

TEST(ConfigLoad, ShippedExampleHoldsTheDefaults) {
  Result<DaemonConfig> result =
      LoadDaemonConfig(std::string(CKPT_SOURCE_DIR) + "/config/ckptd.yaml");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  // The example documents the defaults by setting them: it must read as the built-in defaults.
  const DaemonConfig defaults;
  EXPECT_EQ(result->listen, defaults.listen);
  EXPECT_EQ(result->metrics_listen, defaults.metrics_listen);
  EXPECT_EQ(result->data_dir, defaults.data_dir);
  EXPECT_EQ(result->savepoint_root, defaults.savepoint_root);
  EXPECT_EQ(result->store_backend, defaults.store_backend);
  EXPECT_EQ(result->store_writer_nice, defaults.store_writer_nice);
  EXPECT_EQ(result->threads, defaults.threads);
  EXPECT_EQ(result->lease_ttl_ms, defaults.lease_ttl_ms);
  EXPECT_EQ(result->heartbeat_interval_ms, defaults.heartbeat_interval_ms);
  EXPECT_EQ(result->shutdown_grace_ms, defaults.shutdown_grace_ms);
  EXPECT_EQ(result->start_spread_ms, defaults.start_spread_ms);
  EXPECT_EQ(result->hello_timeout_ms, defaults.hello_timeout_ms);
  EXPECT_EQ(result->log_level, defaults.log_level);
  EXPECT_EQ(result->log_format, defaults.log_format);
  EXPECT_EQ(result->metrics_per_pipeline, defaults.metrics_per_pipeline);
  EXPECT_EQ(result->insecure, defaults.insecure);
  EXPECT_TRUE(result->limits == defaults.limits);
  EXPECT_FALSE(result->tls.enabled);
  EXPECT_FALSE(result->auth.enabled);
  EXPECT_EQ(result->defaults.interval_ms, defaults.defaults.interval_ms);
  EXPECT_EQ(result->defaults.timeout_ms, defaults.defaults.timeout_ms);
  EXPECT_EQ(result->defaults.min_pause_ms, defaults.defaults.min_pause_ms);
  EXPECT_EQ(result->defaults.tolerable_failures, defaults.defaults.tolerable_failures);
  EXPECT_EQ(result->defaults.retained, defaults.defaults.retained);
  EXPECT_TRUE(result->pipelines.empty());
}

TEST(ConfigLoad, ShippedDemoDeclaresFourPipelines) {
  Result<DaemonConfig> result =
      LoadDaemonConfig(std::string(CKPT_SOURCE_DIR) + "/config/demo.yaml");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->data_dir, "./ckptd-data");
  ASSERT_EQ(result->pipelines.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const PipelineSpec& spec = result->pipelines[i];
    EXPECT_EQ(spec.key, (PipelineKey{"demo", "p" + std::to_string(i)}));
    EXPECT_EQ(spec.task_ids, Range(2));
    EXPECT_EQ(spec.interval_ms, 1000);
    EXPECT_EQ(spec.timeout_ms, 10000);
  }
}

}  // namespace
}  // namespace ckpt
