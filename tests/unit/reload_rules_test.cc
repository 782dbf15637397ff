// The reload's table (config/reload_rules.h): every top-level key of the file is either applied
// by a reload or named as needing a restart, and what is not applied stays as it runs.
#include "config/reload_rules.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace ckpt {
namespace {

const std::string kDigest(64, 'a');

// For every top-level key: YAML setting it, and YAML setting it differently.
const std::map<std::string, std::pair<std::string, std::string>>& Variants() {
  static const std::map<std::string, std::pair<std::string, std::string>> variants = {
      {"listen", {"listen: 127.0.0.1:7070\n", "listen: 127.0.0.1:7071\n"}},
      {"metrics_listen", {"metrics_listen: 127.0.0.1:9464\n", "metrics_listen: 127.0.0.1:9465\n"}},
      {"metrics", {"metrics: {per_pipeline: false}\n", "metrics: {per_pipeline: true}\n"}},
      {"data_dir", {"data_dir: /a\n", "data_dir: /b\n"}},
      {"savepoint_root", {"savepoint_root: /a\n", "savepoint_root: /b\n"}},
      {"store",
       {"store: {backend: sqlite, writer_nice: -10}\n",
        "store: {backend: sqlite, writer_nice: -5}\n"}},
      {"threads", {"threads: 1\n", "threads: 2\n"}},
      {"lease_ttl_ms", {"lease_ttl_ms: 10000\n", "lease_ttl_ms: 20000\n"}},
      {"heartbeat_interval_ms", {"heartbeat_interval_ms: 3000\n", "heartbeat_interval_ms: 2000\n"}},
      {"hello_timeout_ms", {"hello_timeout_ms: 10000\n", "hello_timeout_ms: 5000\n"}},
      {"shutdown_grace_ms", {"shutdown_grace_ms: 10000\n", "shutdown_grace_ms: 5000\n"}},
      {"start_spread_ms", {"start_spread_ms: 1000\n", "start_spread_ms: 500\n"}},
      {"stuck_threshold_ms", {"stuck_threshold_ms: 0\n", "stuck_threshold_ms: 60000\n"}},
      {"log", {"log: {level: info}\n", "log: {level: debug}\n"}},
      {"defaults", {"defaults: {interval_ms: 10000}\n", "defaults: {interval_ms: 5000}\n"}},
      {"pipelines",
       {"pipelines: []\n", "pipelines: [{job_id: j, pipeline_id: p, parallelism: 1}]\n"}},
      {"alignment_groups", {"alignment_groups: []\n", "alignment_groups: [{name: g}]\n"}},
      {"tls", {"tls: {cert_file: /c, key_file: /k}\n", "tls: {cert_file: /c2, key_file: /k}\n"}},
      {"auth",
       {"auth: {principals: [{name: a, token_sha256: " + kDigest + ", role: admin}]}\n",
        "auth: {principals: [{name: b, token_sha256: " + kDigest + ", role: admin}]}\n"}},
      {"limits", {"limits: {max_pipelines: 10}\n", "limits: {max_pipelines: 20}\n"}},
      {"admission",
       {"admission: {max_concurrent_rounds: 10}\n", "admission: {max_inflight_bytes: 20}\n"}},
      {"insecure", {"insecure: false\n", "insecure: true\n"}},
      {"advertise", {"advertise: a.example:7070\n", "advertise: b.example:7070\n"}},
  };
  return variants;
}

DaemonConfig Parse(const std::string& yaml) {
  auto config = ParseDaemonConfig(yaml, "test.yaml");
  EXPECT_TRUE(config.ok()) << yaml << config.status().ToString();
  return config.ok() ? *config : DaemonConfig{};
}

TEST(ReloadRules, EveryTopLevelKeyIsAppliedOrNamedAsNeedingARestart) {
  for (std::string_view key : TopLevelConfigKeys()) {
    SCOPED_TRACE(std::string(key));
    auto variant = Variants().find(std::string(key));
    ASSERT_NE(variant, Variants().end())
        << "a new top-level key: give it variants here, and a row in reload_rules.cc";
    const DaemonConfig running = Parse(variant->second.first);
    const DaemonConfig next = Parse(variant->second.second);
    std::set<std::string> seen;
    for (const auto& change : RestartOnlyChanges(running, next)) seen.insert(change.key);
    for (const auto& change : ReloadableChanges(running, next)) seen.insert(change);
    ASSERT_FALSE(seen.empty()) << "its change is neither applied nor said to need a restart";
    for (const std::string& named : seen) {
      EXPECT_EQ(named.rfind(std::string(key), 0), 0u) << named << " was not the key changed";
    }
  }
}

TEST(ReloadRules, WhatARestartAppliesStaysAsItRunsAndSoDoesWhatDependsOnIt) {
  const DaemonConfig running = Parse("log: {level: info}\n");
  DaemonConfig next = Parse(Variants().at("auth").first + "log: {level: debug}\n");
  const auto restart = RestartOnlyChanges(running, next);
  ASSERT_EQ(restart.size(), 1u);
  EXPECT_EQ(restart[0].key, "auth (on/off)");
  const DaemonConfig in_force = InForceAfterReload(running, next);
  EXPECT_FALSE(in_force.auth.enabled) << "turning auth on waits for a restart";
  EXPECT_EQ(WebViewOn(in_force), WebViewOn(running)) << "the web view follows the running auth";
  EXPECT_NE(WebViewOn(next), WebViewOn(running)) << "(the file alone would have turned it off)";
  EXPECT_EQ(in_force.log_level, "debug") << "what a reload applies is applied";
}

TEST(ReloadRules, AdmissionCapsAreReloaded) {
  const DaemonConfig running = Parse(Variants().at("admission").first);
  const DaemonConfig next = Parse(Variants().at("admission").second);
  EXPECT_TRUE(RestartOnlyChanges(running, next).empty());
  EXPECT_EQ(ReloadableChanges(running, next), std::vector<std::string>{"admission"});
  EXPECT_EQ(InForceAfterReload(running, next).admission, next.admission);
}

TEST(ReloadRules, PrincipalsAreReplacedWhileAuthStaysOn) {
  const DaemonConfig running = Parse(Variants().at("auth").first);
  const DaemonConfig next = Parse(Variants().at("auth").second);
  EXPECT_TRUE(RestartOnlyChanges(running, next).empty());
  EXPECT_EQ(ReloadableChanges(running, next), std::vector<std::string>{"auth"});
  EXPECT_EQ(InForceAfterReload(running, next).auth, next.auth);
}

TEST(ReloadRules, AnUnsetValueIsNamedAsUnset) {
  // start_spread_ms unset spreads over the whole interval: not the same as any number.
  const auto changes =
      RestartOnlyChanges(Parse("log: {level: info}\n"), Parse("start_spread_ms: 500\n"));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].key, "start_spread_ms");
  EXPECT_EQ(changes[0].running, "unset");
  EXPECT_EQ(changes[0].wanted, "500");
}

}  // namespace
}  // namespace ckpt
