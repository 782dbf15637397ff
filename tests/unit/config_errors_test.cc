// ParseDaemonConfig's refusals: a table of broken configs, each of which must fail with
// INVALID_ARGUMENT at its exact line:column and say why (a typo with a suggestion), and odd inputs
// that must come back as statuses, never as a crash. Valid configs are in config_test.cc.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "config/daemon_config.h"

namespace ckpt {
namespace {

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
    {"negative admission cap", "admission:\n  max_concurrent_rounds: -5\n", "2:26",
     "admission.max_concurrent_rounds is -5, must be between 0 and"},
    {"unknown admission key", "admission:\n  max_rounds: 5\n", "2:3", "max_rounds"},
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

}  // namespace
}  // namespace ckpt
