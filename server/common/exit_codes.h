#pragma once
// ckptd's exit codes, in one place: main returns them, and the store's fail-stop exits with them.
// systemd's unit lists the ones it must not restart on (RestartPreventExitStatus).

namespace ckpt {

inline constexpr int kExitOk = 0;
// The daemon could not start (a port in use, ...); a restart may well succeed.
inline constexpr int kExitStartFailed = 1;
// sysexits.h's EX_DATAERR: the stored data is damaged or missing (a corrupt database, a data_dir
// that held a store but lost its database). A restart cannot help: the unit does not restart.
inline constexpr int kExitDataLoss = 65;
// sysexits.h's EX_TEMPFAIL: a store write's outcome is unknown (an fsync failed mid-commit). The
// restart reads what is durable, so the unit restarts.
inline constexpr int kExitUnknownOutcome = 75;
// sysexits.h's EX_CONFIG: the configuration is invalid. The unit does not restart on it.
inline constexpr int kExitConfig = 78;

}  // namespace ckpt
