#pragma once
// What a SIGHUP reload applies and what waits for a restart, in one table for every top-level
// key of the file (tests/unit/reload_rules_test.cc fails for a key that is in neither).
//
// Applied: log.level, metrics.per_pipeline, metrics.web_view, defaults, pipelines,
// alignment_groups, and auth while it stays on (or off): its principals are replaced.
// Restart-only: everything else, and turning auth on or off (a change of exposure, judged with
// listen and tls at start). A reload whose restart-only changes are refused changes nothing that
// depends on them: the config in force afterwards (InForceAfterReload) keeps the running values
// of every restart-only key, so that, say, the web view's default follows the auth that is
// running.
//
// Pure functions.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/daemon_config.h"

namespace ckpt {

// Every top-level key of the config file.
std::span<const std::string_view> TopLevelConfigKeys();

// The keys (dotted where a section is partly reloadable: "log.format", "auth (on/off)") whose
// change `next` asks for and only a restart applies, each with the values as text.
struct RestartOnlyChange {
  std::string key;
  std::string running;  // "" for sections
  std::string wanted;
};
std::vector<RestartOnlyChange> RestartOnlyChanges(const DaemonConfig& running,
                                                  const DaemonConfig& next);

// The keys whose change `next` asks for and a reload applies.
std::vector<std::string> ReloadableChanges(const DaemonConfig& running, const DaemonConfig& next);

// The configuration in force after reloading `next` over `running`: `next`'s reloadable keys,
// `running`'s restart-only ones.
DaemonConfig InForceAfterReload(const DaemonConfig& running, const DaemonConfig& next);

}  // namespace ckpt
