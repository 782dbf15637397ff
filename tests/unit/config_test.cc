#include "config/daemon_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
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
// Broken configs: each must fail with INVALID_ARGUMENT at an exact 1-based position.

struct BrokenCase {
  const char* name;
  const char* yaml;
  const char* position;  // "line:column"
  const char* fragment;  // part of the reason
};

const BrokenCase kBrokenCases[] = {
    {"unknown top-level key", "threads: 2\nbogus: 1\n", "2:1",
     "unknown key 'bogus' at the top level"},
    {"typo in a pipeline, with a suggestion",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    parallelism: 2\n"
     "    intervall_ms: 1000\n",
     "5:5", "unknown key 'intervall_ms' in pipelines[0]; did you mean 'interval_ms'?"},
    {"typo at the top level", "lissen: 127.0.0.1:7070\n", "1:1", "did you mean 'listen'?"},
    {"missing _ms suffix in defaults", "defaults:\n  timeout: 5000\n", "2:3",
     "unknown key 'timeout' in defaults; did you mean 'timeout_ms'?"},
    {"string where an integer is expected", "threads: many\n", "1:10",
     "threads: expected an integer, got 'many'"},
    {"quoted number", "lease_ttl_ms: \"5000\"\n", "1:15",
     "expected an integer number of milliseconds, got the quoted string \"5000\""},
    {"float for an _ms key", "defaults:\n  interval_ms: 1.5\n", "2:16",
     "defaults.interval_ms: expected an integer number of milliseconds, got '1.5'"},
    {"duration suffix for an _ms key", "shutdown_grace_ms: 10s\n", "1:20",
     "integer number of milliseconds, got '10s'"},
    {"map where a scalar is expected", "listen:\n  host: 127.0.0.1\n", "2:3",
     "listen: expected a string, got a map"},
    {"list where a map is expected", "store: [sqlite]\n", "1:8",
     "store must be a map of keys, got a list"},
    {"empty value points at its key", "listen: 127.0.0.1:1\nthreads:\nlog: {level: info}\n", "2:1",
     "threads: expected an integer, got nothing"},
    {"syntax error: unclosed flow list", "pipelines: [a\nthreads: 2\n", "2:8",
     "end of sequence flow not found"},
    {"syntax error: tab indentation", "log:\n\tlevel: info\n", "2:7", "illegal map value"},
    {"missing job_id",
     "pipelines:\n"
     "  - pipeline_id: p\n"
     "    parallelism: 2\n",
     "2:5", "pipelines[0]: missing required key 'job_id'"},
    {"missing pipeline_id",
     "pipelines:\n"
     "  - job_id: j\n"
     "    parallelism: 2\n",
     "2:5", "missing required key 'pipeline_id'"},
    {"neither task_ids nor parallelism",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "  - job_id: j\n"
     "    pipeline_id: q\n",
     "2:5", "pipelines[0]: missing required key 'task_ids' or 'parallelism'"},
    {"duplicate top-level key", "threads: 1\nlisten: 127.0.0.1:1\nthreads: 2\n", "3:1",
     "duplicate key 'threads' at the top level (first at line 1)"},
    {"duplicate key in a pipeline",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    job_id: k\n"
     "    parallelism: 1\n",
     "4:5", "duplicate key 'job_id' in pipelines[0]"},
    {"duplicate key in a flow map", "log: {level: info, level: warn}\n", "1:20",
     "duplicate key 'level' in log"},
    {"duplicate pipeline",
     "pipelines:\n"
     "  - {job_id: j, pipeline_id: p, parallelism: 1}\n"
     "  - {job_id: j, pipeline_id: q, parallelism: 1}\n"
     "  - {job_id: j, pipeline_id: p, parallelism: 1}\n",
     "4:5", "pipelines[2]: duplicate pipeline j/p, already declared in pipelines[0]"},
    {"both task_ids and parallelism",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    task_ids: [a, b]\n"
     "    parallelism: 2\n",
     "5:5", "give task_ids or parallelism, not both"},
    {"interval too short",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    parallelism: 1\n"
     "    interval_ms: 5\n",
     "2:5", "pipelines[0]: interval_ms is 5, must be at least 10"},
    {"interval too short in defaults", "defaults:\n  interval_ms: 9\n", "2:3",
     "defaults: interval_ms is 9, must be at least 10"},
    {"timeout 0 in defaults", "defaults:\n  timeout_ms: 0\n", "2:3",
     "defaults: timeout_ms is 0, must be at least 1"},
    {"timeout 0 in a pipeline",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    parallelism: 1\n"
     "    timeout_ms: 0\n",
     "2:5", "timeout_ms is 0"},
    {"retained 0 in defaults", "defaults: {retained: 0}\n", "1:11", "retained is 0"},
    {"empty job_id",
     "pipelines:\n"
     "  - job_id: \"\"\n"
     "    pipeline_id: p\n"
     "    parallelism: 1\n",
     "2:5", "job_id is empty"},
    {"duplicate task ids",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    task_ids: [a, b, a]\n",
     "2:5", "task_ids[2] \"a\" is a duplicate"},
    {"task id that is not a string",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    task_ids: [a, [b]]\n",
     "4:19", "pipelines[0].task_ids[1]: expected a string, got a list"},
    {"task_ids not a list",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    task_ids: a\n",
     "4:15", "expected a list of strings, got 'a'"},
    {"heartbeat equal to lease", "lease_ttl_ms: 2000\nheartbeat_interval_ms: 2000\n", "2:24",
     "heartbeat_interval_ms (2000) must be less than lease_ttl_ms (2000)"},
    {"lease below the default heartbeat", "lease_ttl_ms: 1000\n", "1:15",
     "heartbeat_interval_ms (3000) must be less than lease_ttl_ms (1000)"},
    {"heartbeat zero", "heartbeat_interval_ms: 0\n", "1:24",
     "heartbeat_interval_ms is 0, must be between 1 and"},
    {"negative shutdown grace", "shutdown_grace_ms: -1\n", "1:20",
     "shutdown_grace_ms is -1, must be between 0 and"},
    {"negative start spread", "start_spread_ms: -5\n", "1:18",
     "start_spread_ms is -5, must be between 0 and"},
    {"bad backend", "store:\n  backend: postgres\n", "2:12",
     "store.backend 'postgres' is not one of sqlite"},
    {"etcd transactions below etcd's default",
     "store:\n  backend: etcd\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n"
     "    max_txn_ops: 64\nadvertise: 127.0.0.1:7070\n",
     "5:18", "store.etcd.max_txn_ops is 64, must be between 128 and 10000"},
    {"etcd backend without its section", "store:\n  backend: etcd\nadvertise: 127.0.0.1:7070\n",
     "1:1", "store.backend etcd needs a store.etcd section with its endpoints"},
    {"etcd section without endpoints",
     "store:\n  backend: etcd\n  etcd:\n    prefix: /x\nadvertise: 127.0.0.1:7070\n", "3:3",
     "store.etcd: missing required key 'endpoints'"},
    {"etcd endpoint without a scheme",
     "store:\n  backend: etcd\n  etcd:\n    endpoints: [127.0.0.1:2379]\n"
     "advertise: 127.0.0.1:7070\n",
     "4:16", "store.etcd.endpoints: '127.0.0.1:2379' must start with http://"},
    {"etcd section beside the sqlite backend",
     "store:\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n", "2:3",
     "store.etcd is set but store.backend is sqlite; set store.backend: etcd to use it"},
    {"etcd backend without advertise",
     "store:\n  backend: etcd\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n", "1:1",
     "store.backend etcd needs `advertise: HOST:PORT`"},
    {"store writer nice below -20", "store:\n  writer_nice: -21\n", "2:16",
     "store.writer_nice is -21, must be between -20 and 19"},
    {"store writer nice above 19", "store: {writer_nice: 20}\n", "1:22",
     "store.writer_nice is 20, must be between -20 and 19"},
    {"bad log level", "log:\n  level: verbose\n", "2:10",
     "log.level 'verbose' is not one of trace, debug, info, warn, error, critical, off"},
    {"log level typo", "log: {level: inf}\n", "1:14", "did you mean 'info'?"},
    {"listen without a port", "listen: localhost\n", "1:9",
     "listen: expected HOST:PORT, got 'localhost'"},
    {"metrics port out of range", "metrics_listen: 0.0.0.0:70000\n", "1:17",
     "metrics_listen: the port must be a number from 0 to 65535"},
    {"listen with an empty host", "listen: \":7070\"\n", "1:9", "the host is empty"},
    {"IPv6 host without brackets", "listen: \"::1:7070\"\n", "1:9", "needs brackets"},
    {"negative parallelism",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    parallelism: -2\n",
     "4:18", "pipelines[0].parallelism is -2, must be between 1 and 100000"},
    {"zero parallelism", "pipelines: [{job_id: j, pipeline_id: p, parallelism: 0}]\n", "1:54",
     "parallelism is 0"},
    {"threads out of range", "threads: 99999999999\n", "1:10",
     "threads is 99999999999, must be between 0 and 256"},
    {"threads above the cap", "threads: 257\n", "1:10", "must be between 0 and 256"},
    {"negative threads", "threads: -1\n", "1:10", "threads is -1"},
    {"integer beyond 64 bits", "shutdown_grace_ms: 99999999999999999999999\n", "1:20",
     "shutdown_grace_ms is 99999999999999999999999, must be between"},
    {"int32 field overflow",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    parallelism: 1\n"
     "    retained: 3000000000\n",
     "5:15", "pipelines[0].retained is 3000000000, must be between -2147483648 and 2147483647"},
    {"hex is not decimal", "threads: 0x10\n", "1:10", "expected an integer, got '0x10'"},
    {"top level is a list", "- listen\n- threads\n", "1:1",
     "the top level must be a map of keys, got a list"},
    {"top level is a scalar", "# a comment\nhello\n", "2:1",
     "the top level must be a map of keys, got 'hello'"},
    {"pipelines is a map", "pipelines:\n  job_id: j\n", "2:3",
     "pipelines: expected a list of pipelines, got a map"},
    {"pipeline entry is a scalar", "pipelines:\n  - p0\n", "2:5",
     "pipelines[0] must be a map of keys, got 'p0'"},
    {"bare dash as a pipeline entry", "pipelines:\n  -\n", "2:3",
     "pipelines[0] is empty; expected a map of keys"},
    {"empty task id item",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    task_ids:\n"
     "      - a\n"
     "      -\n",
     "5:7", "pipelines[0].task_ids[1]: expected a string, got nothing"},
    {"key in the wrong case", "Threads: 2\n", "1:1", "did you mean 'threads'?"},
    {"log level in the wrong case", "log: {level: INFO}\n", "1:14", "did you mean 'info'?"},
    {"explicit string tag on an integer", "threads: !!str 5\n", "1:10",
     "expected an integer, got '5' tagged tag:yaml.org,2002:str"},
    {"non-string key", "? [a, b]\n: 1\n", "1:3", "keys must be strings, got a list"},
    {"two documents", "threads: 1\n---\nthreads: 2\n", "3:1", "one YAML document"},
    {"two documents, the second after an empty one", "threads: 1\n---\n---\nthreads: 2\n", "4:1",
     "one YAML document"},
    // YAML::LoadAll loops forever on these (yaml-cpp issue #1040); the loader must not.
    {"stray comma", ",\n", "1:1", "unexpected ','"},
    {"stray comma after a document", "threads: 1\n---\n,\n", "3:1", "unexpected ','"},
    {"data_dir empty", "data_dir: \"\"\n", "1:11", "data_dir is empty"},
    {"savepoint_root with a control character", "savepoint_root: \"/a\\tb\"\n", "1:17",
     "savepoint_root: savepoint target contains a control character"},
    {"undefined alias", "threads: *nope\n", "1:10", "anchor is not defined"},
    {"bad log format", "log:\n  format: xml\n", "2:11",
     "log.format 'xml' is not one of text, json"},
    {"log format typo", "log: {format: jsno}\n", "1:15", "did you mean 'json'?"},
    {"per_pipeline as yes", "metrics:\n  per_pipeline: yes\n", "2:17",
     "metrics.per_pipeline: expected true or false, got 'yes'"},
    {"per_pipeline quoted", "metrics: {per_pipeline: \"true\"}\n", "1:25",
     "metrics.per_pipeline: expected true or false, got the quoted string \"true\""},
    {"per_pipeline as a number", "metrics:\n  per_pipeline: 1\n", "2:17",
     "expected true or false, got '1'"},
    {"web_view as off", "metrics:\n  web_view: off\n", "2:13",
     "metrics.web_view: expected true or false, got 'off'"},
    {"typo in metrics", "metrics:\n  per_pipelines: true\n", "2:3",
     "unknown key 'per_pipelines' in metrics; did you mean 'per_pipeline'?"},
    {"metrics is a scalar", "metrics: on\n", "1:10", "metrics must be a map of keys, got 'on'"},
    {"metrics_listen left empty", "metrics_listen:\n", "1:1",
     "metrics_listen: expected a string, got nothing"},
    {"metrics_listen without a port", "metrics_listen: localhost\n", "1:17",
     "metrics_listen: expected HOST:PORT, got 'localhost'"},
    {"restore_from as a string",
     "pipelines:\n"
     "  - {job_id: j, pipeline_id: p, parallelism: 1, restore_from: j/old@3}\n",
     "2:63", "pipelines[0].restore_from: expected a map of job_id, pipeline_id and checkpoint_id"},
    {"restore_from without a pipeline",
     "pipelines:\n"
     "  - {job_id: j, pipeline_id: p, parallelism: 1, restore_from: {job_id: j}}\n",
     "2:63", "pipelines[0].restore_from: needs job_id and pipeline_id"},
    {"restore_from with a negative id",
     "pipelines:\n"
     "  - job_id: j\n"
     "    pipeline_id: p\n"
     "    parallelism: 1\n"
     "    restore_from: {job_id: j, pipeline_id: old, checkpoint_id: -1}\n",
     "5:64", "restore_from.checkpoint_id is -1"},
    {"restore_from of the pipeline itself",
     "pipelines:\n"
     "  - {job_id: j, pipeline_id: p, parallelism: 1,\n"
     "     restore_from: {job_id: j, pipeline_id: p}}\n",
     "2:5", "restore_from: names the pipeline itself"},
    {"group without a name", "alignment_groups:\n  - {interval_ms: 100}\n", "2:5",
     "alignment_groups[0]: missing required key 'name'"},
    {"group interval too short", "alignment_groups:\n  - {name: g, interval_ms: 5}\n", "2:5",
     "interval_ms is 5"},
    {"group name with a slash", "alignment_groups:\n  - {name: a/b}\n", "2:5", "name contains /"},
    {"duplicate group", "alignment_groups:\n  - {name: g}\n  - {name: g}\n", "3:5",
     "duplicate alignment group g"},
    {"typo in a group key", "alignment_groups:\n  - {name: g, intervl_ms: 100}\n", "2:15",
     "did you mean 'interval_ms'"},
    {"groups as a map", "alignment_groups: {name: g}\n", "1:19", "expected a list of groups"},
};

class ConfigBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(ConfigBroken, FailsAtItsPosition) {
  const BrokenCase& c = GetParam();
  SCOPED_TRACE(c.yaml);
  Result<DaemonConfig> result = ParseDaemonConfig(c.yaml, "test.yaml");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = result.status().message();
  const std::string prefix = std::string("test.yaml:") + c.position + ": ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  EXPECT_NE(message.find(c.fragment), std::string::npos) << message;
}

// "unknown top-level key" -> "unknown_top_level_key": gtest names allow only [A-Za-z0-9_].
std::string CaseName(const ::testing::TestParamInfo<BrokenCase>& info) {
  std::string name = info.param.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Config, ConfigBroken, ::testing::ValuesIn(kBrokenCases), CaseName);

TEST(ConfigErrors, TableIsLargeEnough) { EXPECT_GE(std::size(kBrokenCases), 15u); }

TEST(ConfigErrors, GarbageNeverThrows) {
  // Odd inputs that have crashed YAML loaders elsewhere: all must come back as statuses.
  const std::string inputs[] = {
      std::string("threads: 1\0garbage", 19),
      "\xff\xfe\x00",
      std::string(5000, '[') + std::string(5000, ']'),
      "a: &a [*a]\n",
      "pipelines: &p [*p]\n",
      "%YAML 9.9\n---\nthreads: 1\n",
      "!!binary threads: 1\n",
      "{",
      "'unterminated",
  };
  for (const std::string& input : inputs) {
    Result<DaemonConfig> result = ParseDaemonConfig(input, "odd.yaml");
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(result.status().message().rfind("odd.yaml", 0), 0u) << result.status().message();
    }
  }
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
    EXPECT_EQ(config.start_spread_ms, 1000);
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
      "  per_pipeline: true\n");
  EXPECT_EQ(config.listen, "0.0.0.0:7171");
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
