#pragma once
// How a daemon leaves when it must (docs/DESIGN.md "High availability"): at once, without
// destructors, so that no other thread tells a worker or writes anything more under a leadership
// or a store that can no longer be trusted. The exit code says what systemd does next: 75 (a
// restart: it comes back as a standby, or reads what is durable), 65 (no restart: the data needs
// an operator). The election, the takeover and the store's fail-stop all leave through here.
//
// Threading: any thread.

#include <string>

#include "ha/etcd_outcomes.h"

namespace ckpt {

// Logs `why` at critical level with the outcome's row, flushes the log, and exits with the code
// of its action (ha/etcd_outcomes.h). For an outcome whose action does not exit, exits 75 all
// the same: a caller that asked to exit must not go on.
[[noreturn]] void ExitFor(EtcdOutcome outcome, const std::string& why);

// The same for a code decided elsewhere (the store's fail-stop: 65 or 75).
[[noreturn]] void ExitNow(int code, const std::string& why);

}  // namespace ckpt
