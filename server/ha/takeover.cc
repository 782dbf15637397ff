#include "ha/takeover.h"

#include "ha/exit_policy.h"

namespace ckpt {

EtcdOutcome TakeoverOutcome(const Status& failed, bool in_check) {
  if (failed.code() == StatusCode::kDataLoss) return EtcdOutcome::kDamagedStore;
  if (in_check && failed.code() == StatusCode::kFailedPrecondition) {
    return EtcdOutcome::kMisconfigured;
  }
  return EtcdOutcome::kTakeoverFailed;
}

void RunTakeover(const TakeoverSteps& steps) {
  steps.fence();
  if (Status s = steps.check(); !s.ok()) {
    ExitFor(TakeoverOutcome(s, /*in_check=*/true),
            "takeover: checking store.etcd.max_txn_ops: " + s.ToString());
  }
  if (Status s = steps.load(); !s.ok()) {
    ExitFor(TakeoverOutcome(s, /*in_check=*/false),
            "takeover: loading the pipelines: " + s.ToString());
  }
  steps.serve();
}

}  // namespace ckpt
