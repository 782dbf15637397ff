#include "ha/exit_policy.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "common/exit_codes.h"

namespace ckpt {

void ExitFor(EtcdOutcome outcome, const std::string& why) {
  const OutcomeRule& rule = RuleFor(outcome);
  int code = ExitCodeOf(rule.action);
  if (code == 0) code = kExitUnknownOutcome;
  ExitNow(code, std::string(rule.what) + ": " + why);
}

void ExitNow(int code, const std::string& why) {
  spdlog::critical("{}; exiting now ({}: {})", why, code,
                   code == kExitDataLoss ? "the stored data cannot be trusted; not restarted"
                   : code == kExitConfig
                       ? "the configuration must change; not restarted"
                       : "nothing more is sent or written; the restart reads what is durable");
  spdlog::default_logger()->flush();
  std::_Exit(code);
}

}  // namespace ckpt
