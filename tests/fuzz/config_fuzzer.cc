// libFuzzer target: the config parser. ParseDaemonConfig must turn any text into a config or an
// INVALID_ARGUMENT status naming the source: never crash, hang, throw or trip ASan/UBSan.
// Seeds: tests/fuzz/corpus/config/. Run: scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config/daemon_config.h"
#include "core/spec_validation.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "config_fuzzer: %s\n", what);
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ckpt::Result<ckpt::DaemonConfig> result = ckpt::ParseDaemonConfig(text, "fuzz.yaml");
  if (!result.ok()) {
    // Errors are INVALID_ARGUMENT and start with the file name (file, line, column:
    // docs/man/ckptd.yaml.5, "DESCRIPTION").
    if (result.status().code() != ckpt::StatusCode::kInvalidArgument) {
      Fail("error status is not INVALID_ARGUMENT");
    }
    if (result.status().message().rfind("fuzz.yaml", 0) != 0) Fail("error does not name the file");
    return 0;
  }
  // A config that parsed holds what the parser promises.
  const ckpt::DaemonConfig& config = *result;
  if (config.heartbeat_interval_ms >= config.lease_ttl_ms) Fail("heartbeat >= lease accepted");
  if (config.threads < 0 || config.threads > 256) Fail("threads out of range accepted");
  if (config.data_dir.empty()) Fail("empty data_dir accepted");
  for (const auto& spec : config.pipelines) {
    // The file and the admin API share one set of rules.
    if (!ckpt::ValidateSpec(spec).ok()) Fail("a pipeline ValidateSpec rejects was accepted");
  }
  return 0;
}
