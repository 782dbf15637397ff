#pragma once
// WorkerChannel: what one worker stream is to its pipeline, whatever carries it: the hello's
// checks, the registration with the pipeline's runner, and each later message handed on to it. A
// Connect stream (rpc/worker_session.h) carries one channel; a Session call (rpc/session_call.h)
// carries many, one per pipeline, on one stream.
//
// Threading: Handle runs on the carrier's read side, one call at a time (a carrier never reads
// two messages of one channel at once). ReportEnded may come from any thread (the lease timer,
// a reaction, OnDone): it and the hello's registration are ordered by runner_mu_, so that a
// stream ending while its hello registers either comes first (and nothing registers) or after
// (and its SessionEnded follows the Register on the pipeline's strand). Nothing here blocks:
// the pipeline is reached by posting to its strand through its runner.

#include <memory>
#include <optional>
#include <string>

#include "ckpt/v1/worker.pb.h"
#include "common/mutex.h"
#include "core/limits.h"
#include "rpc/gatekeeper.h"
#include "runtime/daemon_metrics.h"
#include "runtime/quarantine.h"
#include "runtime/registry.h"
#include "runtime/session_sink.h"

namespace ckpt {

// What every channel of the daemon needs; owned by the worker service, which outlives them.
struct ChannelDeps {
  Registry& registry;
  DaemonMetrics& metrics;
  const Gatekeeper& gatekeeper;
  Limits limits;
  // Pipelines whose records could not be read: a hello for one is FAILED_PRECONDITION with why.
  // May be null (no quarantine).
  const Quarantine* quarantine = nullptr;
};

// How a message ended its channel.
struct ChannelEnding {
  Status status;  // OK after a goodbye
  // A refusal of the caller itself (not identified, or its principal no longer allowed worker
  // streams): on a Session call it ends the whole call, not only this channel.
  bool caller_refused = false;
};

class WorkerChannel {
 public:
  // `method` names the call in refusals ("WorkerService.Connect", "WorkerService.Session").
  WorkerChannel(SessionId id, const ChannelDeps& deps, const char* method)
      : id_(id), deps_(deps), method_(method) {}
  WorkerChannel(const WorkerChannel&) = delete;
  WorkerChannel& operator=(const WorkerChannel&) = delete;

  // Handles the channel's next message: the first must be hello. `sink` is where the pipeline
  // writes to this channel (registered with it at hello) and where a refused savepoint request is
  // answered; `context` identifies the caller again at hello. Nothing when the channel goes on;
  // else how it ends (already reported to the pipeline, with the reason).
  std::optional<ChannelEnding> Handle(const v1::WorkerMessage& message,
                                      const std::shared_ptr<SessionSink>& sink,
                                      const grpc::ServerContextBase& context);

  // Tells the pipeline (if the hello registered one) that the channel is gone, once, with why;
  // `goodbye`: the worker said so.
  void ReportEnded(const std::string& why, bool goodbye = false) CKPT_EXCLUDES(runner_mu_);

  SessionId id() const { return id_; }
  bool hello_seen() const { return hello_seen_; }

 private:
  // The hello's ids within limits and its caller (identified again under the policy of now)
  // allowed its job: OK with the caller's principal in `*principal`, or how the channel ends.
  std::optional<ChannelEnding> CheckHello(const v1::Hello& hello,
                                          const grpc::ServerContextBase& context,
                                          std::string* principal) const;
  std::optional<ChannelEnding> HandleHello(const v1::Hello& hello,
                                           const std::shared_ptr<SessionSink>& sink,
                                           const grpc::ServerContextBase& context);
  // Reports the end with `why` and returns `status` as the channel's ending.
  ChannelEnding EndWith(const std::string& why, Status status);
  std::shared_ptr<PipelineRunner> runner() CKPT_EXCLUDES(runner_mu_);

  const SessionId id_;
  const ChannelDeps& deps_;
  const char* const method_;

  // Read side only (Handle).
  bool hello_seen_ = false;
  bool backlog_ = false;   // the last heartbeat's backlog: only a change goes to the pipeline
  std::string principal_;  // who the hello authenticated as ("" without auth)

  Mutex runner_mu_;
  std::shared_ptr<PipelineRunner> runner_ CKPT_GUARDED_BY(runner_mu_);  // set once, at hello
  bool end_reported_ CKPT_GUARDED_BY(runner_mu_) = false;
};

}  // namespace ckpt
