#pragma once
// The HA outcome table: every answer etcd can give the daemon, and the one thing the daemon does
// about it (docs/DESIGN.md "High availability"). The etcd store, the election and the takeover
// classify what they met (ClassifyEtcdFailure) and act by the row's action; nobody decides it
// again elsewhere.
//
//   outcome           action               what the daemon does
//   ----------------  -------------------  ----------------------------------------------------
//   applied           answer               the write is durable: answer its rounds
//   request refused   fail the request     etcd refused this request's own shape (too large,
//                                          too many operations): only its rounds fail, logged
//   refused           fail, not writable   space, rate, auth, an alarm: nothing applied; the
//                                          rounds fail "store not writable", /readyz 503, a
//                                          probe until etcd takes writes again
//   not sent          fail, not writable   the lease unconfirmed or no member answers before
//                                          sending: as above
//   unknown           resolve by reading   sent, answer lost (a deadline, a member gone): ask
//                                          the write cursor; landed: answer; not: send again
//   still unknown     exit 75              the resolve window ended without an answer
//   fenced out        exit 75              the fence failed, the leader key or the lease is
//                                          gone: leadership lost, stop at once
//   takeover failed   exit 75              a takeover could not read or prepare; its lease
//                                          lapses and another daemon tries
//   misconfigured     exit 78              etcd refuses what the configuration asks (a txn of
//                                          store.etcd.max_txn_ops): the unit does not restart
//   unreadable record quarantine           one pipeline's or group's record does not parse or
//                                          validate: only that one is UNREADABLE
//   damaged store     exit 65              a newer or damaged layout record, a damaged
//                                          STORE_ID: the data itself cannot be trusted
//
// Pure: no I/O.

#include <string>
#include <string_view>

#include "common/status.h"

namespace ckpt {

enum class EtcdOutcome {
  kApplied,
  kRequestRefused,
  kRefused,
  kNotSent,
  kUnknown,
  kStillUnknown,
  kFencedOut,
  kTakeoverFailed,
  kMisconfigured,
  kUnreadableRecord,
  kDamagedStore,
};

enum class HaAction {
  kAnswer,
  kFailRequest,
  kFailNotWritable,
  kResolveByReading,
  kQuarantine,
  kExitUnknownOutcome,  // exit 75: the unit restarts the daemon as a standby
  kExitDataLoss,        // exit 65: the unit does not restart it
  kExitConfig,          // exit 78: the unit does not restart it
};

struct OutcomeRule {
  EtcdOutcome outcome;
  HaAction action;
  const char* what;  // the outcome in words, for logs and messages
};

// The row of `outcome`.
const OutcomeRule& RuleFor(EtcdOutcome outcome);
HaAction ActionFor(EtcdOutcome outcome);
// The exit code of an exiting action (75, 65 or 78: common/exit_codes.h); 0 otherwise.
int ExitCodeOf(HaAction action);

// What a failed etcd call's status says: `sent` is false when the call never left (no channel,
// the lease unconfirmed before it was sent). gRPC's own "larger than max" refusal is the
// request's size; any other RESOURCE_EXHAUSTED (database space exceeded, too many requests) and
// the refusals of the whole store (auth, an alarm, "not capable") are kRefused; INVALID_ARGUMENT
// is the request's shape; anything else may have been applied (kUnknown).
EtcdOutcome ClassifyEtcdFailure(const Status& status, bool sent = true);

// "store not writable: <what etcd said>": the message of a round failed by kFailNotWritable,
// UNAVAILABLE (so that StoreHealth marks the store failing and probes it).
Status NotWritable(const Status& etcd_said);

}  // namespace ckpt
