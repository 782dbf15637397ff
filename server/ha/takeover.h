#pragma once
// The takeover, in one place (docs/DESIGN.md "High availability"): what a daemon that just won
// the election does before it serves, in this order, and how each step's failure ends it.
//
//   1. fence     every write from now on carries the leader key's create revision
//   2. check     etcd takes a transaction of store.etcd.max_txn_ops operations (else exit 78:
//                every full batch would be refused)
//   3. load      every pipeline and group, read at a revision after the fence (unreadable records
//                are quarantined, not fatal); loaded pipelines bump their generations and reserve
//                fresh id blocks before their first trigger
//   4. serve     the role becomes LEADER, /readyz and gRPC health follow
//
// Nothing has been served before step 4, so a step that fails ends the process through the
// outcome table (ha/exit_policy.h): its lease lapses and another daemon tries. DATA_LOSS from the
// load (a damaged layout) is exit 65, a configuration etcd refuses 78, anything else 75.
//
// Threading: Run blocks its (takeover) thread for the whole sequence; never call it on a strand.

#include <functional>

#include "common/status.h"
#include "ha/etcd_outcomes.h"

namespace ckpt {

struct TakeoverSteps {
  std::function<void()> fence;
  std::function<Status()> check;  // FAILED_PRECONDITION: misconfigured
  std::function<Status()> load;   // DATA_LOSS: damaged store
  std::function<void()> serve;
};

// Which outcome a failed step's status is (for tests, and for Run).
EtcdOutcome TakeoverOutcome(const Status& failed, bool in_check);

// Runs the steps in order; returns once serving. A failed step exits (never returns).
void RunTakeover(const TakeoverSteps& steps);

}  // namespace ckpt
