#include "ha/etcd_outcomes.h"

#include <array>

#include "common/exit_codes.h"

namespace ckpt {

namespace {

constexpr std::array<OutcomeRule, 11> kRules = {{
    {EtcdOutcome::kApplied, HaAction::kAnswer, "applied"},
    {EtcdOutcome::kRequestRefused, HaAction::kFailRequest, "this request refused for its shape"},
    {EtcdOutcome::kRefused, HaAction::kFailNotWritable, "refused (space, rate, auth, an alarm)"},
    {EtcdOutcome::kNotSent, HaAction::kFailNotWritable, "not sent (lease unconfirmed, no member)"},
    {EtcdOutcome::kUnknown, HaAction::kResolveByReading, "outcome unknown"},
    {EtcdOutcome::kStillUnknown, HaAction::kExitUnknownOutcome, "outcome still unknown"},
    {EtcdOutcome::kFencedOut, HaAction::kExitUnknownOutcome, "leadership lost"},
    {EtcdOutcome::kTakeoverFailed, HaAction::kExitUnknownOutcome, "takeover failed"},
    {EtcdOutcome::kMisconfigured, HaAction::kExitConfig, "etcd refuses the configuration"},
    {EtcdOutcome::kUnreadableRecord, HaAction::kQuarantine, "unreadable record"},
    {EtcdOutcome::kDamagedStore, HaAction::kExitDataLoss, "damaged store"},
}};

}  // namespace

const OutcomeRule& RuleFor(EtcdOutcome outcome) {
  for (const OutcomeRule& rule : kRules) {
    if (rule.outcome == outcome) return rule;
  }
  // Every enumerator has its row (the unit test walks them all); an unknown value is a bug that
  // must still not go on as if it were safe.
  static constexpr OutcomeRule kNone{EtcdOutcome::kStillUnknown, HaAction::kExitUnknownOutcome,
                                     "an outcome without a row"};
  return kNone;
}

HaAction ActionFor(EtcdOutcome outcome) { return RuleFor(outcome).action; }

int ExitCodeOf(HaAction action) {
  switch (action) {
    case HaAction::kExitUnknownOutcome: return kExitUnknownOutcome;
    case HaAction::kExitDataLoss: return kExitDataLoss;
    case HaAction::kExitConfig: return kExitConfig;
    default: return 0;
  }
}

EtcdOutcome ClassifyEtcdFailure(const Status& status, bool sent) {
  if (status.ok()) return EtcdOutcome::kApplied;
  if (!sent) return EtcdOutcome::kNotSent;
  switch (status.code()) {
    case StatusCode::kResourceExhausted:
      // gRPC's own refusal of a message over the member's receive limit is about this request;
      // etcd's (database space exceeded, too many requests) about every write.
      if (status.message().find("larger than max") != std::string::npos) {
        return EtcdOutcome::kRequestRefused;
      }
      return EtcdOutcome::kRefused;
    case StatusCode::kInvalidArgument:  // too large, too many operations, a duplicate key
      return EtcdOutcome::kRequestRefused;
    case StatusCode::kFailedPrecondition:  // "not capable", "not leader" of a lease call
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated: return EtcdOutcome::kRefused;
    default: return EtcdOutcome::kUnknown;
  }
}

Status NotWritable(const Status& etcd_said) {
  return Status::Unavailable("store not writable: " + etcd_said.message());
}

}  // namespace ckpt
