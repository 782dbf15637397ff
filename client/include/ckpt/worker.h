#pragma once
// The ckpt worker SDK: serve pipelines of a ckptd daemon from a worker process.
//
//   ckpt::sdk::WorkerRuntime runtime("127.0.0.1:7070");
//   ckpt::sdk::PipelineWorker* self = nullptr;
//   ckpt::sdk::PipelineHandlers handlers;
//   handlers.on_welcome = [](const ckpt::sdk::Welcome& w) {
//     // before any trigger: load the state of w.restore.task_states (checkpoint_id 0: none)
//   };
//   handlers.on_release = [](const std::vector<int64_t>& ids) { /* delete their state */ };
//   handlers.on_trigger = [&self](const ckpt::sdk::Trigger& t) {
//     // snapshot the task's state, then:
//     self->Ack(t.checkpoint_id, "0", {.uri = "s3://bucket/chk-" +
//     std::to_string(t.checkpoint_id)});
//   };
//   auto worker = runtime.AddPipeline({.worker_id = "w1", .job_id = "job", .pipeline_id = "p0",
//                                      .task_ids = {"0"}}, std::move(handlers));
//   self = worker.get();
//   worker->Start();
//   ...
//   worker->Goodbye();
//   worker->WaitUntilStopped(std::chrono::steady_clock::now() + std::chrono::seconds(2));
//
// With TLS and a bearer token (see WorkerRuntimeOptions):
//   ckpt::sdk::WorkerRuntimeOptions options;
//   options.server_address = "ckptd.internal:7070";
//   options.ca_file = "/etc/ckpt/ca.pem";
//   options.token_file = "/etc/ckpt/worker.token";
//   ckpt::sdk::WorkerRuntime runtime(options);  // std::invalid_argument if a file is unusable
//
// Threads: a WorkerRuntime owns a fixed pool of threads that runs every pipeline's timers and
// handlers, and a few gRPC channels that every pipeline's stream shares. A pipeline is one Connect
// stream and one serialized context (its handlers and the work given to Post and RunAfter run
// there, one at a time): thousands of pipelines cost memory, not threads.
//
// This header is the SDK's whole interface: it names only the standard library and its own types
// (no Asio, gRPC or protobuf), so a program links ckpt_sdk without compiling against those.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::sdk {

namespace internal {
class RuntimeCore;
}  // namespace internal

enum class CheckpointKind {
  kUnspecified = 0,
  kCheckpoint = 1,
  kSavepoint = 2,
  kSavepointAndStop = 3
};
// "CHECKPOINT", "SAVEPOINT", "SAVEPOINT_AND_STOP" or "UNSPECIFIED".
const char* ToString(CheckpointKind kind);

enum class PipelineState {
  kUnspecified = 0,
  kWaitingForTasks = 1,
  kRunning = 2,
  kPaused = 3,
  kFailed = 4,
  kStopped = 5,
};
// "WAITING_FOR_TASKS", "RUNNING", ... (the names ckptctl and docs/PROTOCOL.md use).
const char* ToString(PipelineState state);

// The status a stream ended with: gRPC's status codes, with gRPC's numbers (so a code logged as a
// number reads the same here, in the daemon's logs and in any gRPC tool). A code this SDK does not
// know arrives as kUnknown.
enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};
// gRPC's names: "OK", "NOT_FOUND", "UNAVAILABLE", ...
const char* ToString(StatusCode code);

// A task's snapshot, opaque to the daemon and stored with the completed checkpoint.
struct TaskStateInfo {
  std::string uri;
  int64_t size_bytes = 0;
  std::string checksum;
};

// What a task may tell operators about its part of a checkpoint (shown by `ckptctl checkpoint
// get` and the web view); 0: not reported. Durations in milliseconds.
struct AckFigures {
  int64_t sync_duration_ms = 0;       // the barrier's synchronous snapshot
  int64_t async_duration_ms = 0;      // the asynchronous part (the upload)
  int64_t alignment_duration_ms = 0;  // waiting for the barrier on every input
  int64_t bytes_processed_during_alignment = 0;
};

// Where this stream's tasks restore from: the pipeline's newest durable checkpoint or savepoint
// (or one an operator chose). checkpoint_id 0: a fresh pipeline, start empty.
struct RestorePoint {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kUnspecified;
  std::string location;  // savepoints: where their state went
  // task id -> the state it acked. Only this stream's tasks, unless `rescaled`: then every task
  // state of the source (its task set differs from this pipeline's), to redistribute.
  std::map<std::string, TaskStateInfo> task_states;
  std::string source_job_id;  // the pipeline whose checkpoint it is
  std::string source_pipeline_id;
  bool rescaled = false;
  // Where the checkpoint was taken, with positions (see Trigger::position); 0: none. Resume
  // reading from here.
  int64_t position = 0;
  // The checkpoint is COMMITTING (a pipeline with a commit phase, docs/PROTOCOL.md): commit what
  // its state held back in on_welcome (again: it may have been done before a crash; committing
  // must be idempotent). With auto_commit, `committed` is sent for this stream's tasks once
  // on_welcome returns.
  bool commit_pending = false;
};

// The daemon accepted the stream (the answer to hello).
struct Welcome {
  std::string session_id;
  int64_t generation = 0;
  PipelineState state = PipelineState::kUnspecified;
  // Also a completion notice: the latest durable checkpoint, which after a daemon crash may be one
  // no `complete` was received for.
  int64_t last_completed_checkpoint_id = 0;
  CheckpointKind last_completed_kind = CheckpointKind::kUnspecified;
  int64_t heartbeat_interval_ms = 0;
  int64_t lease_ttl_ms = 0;
  // The leadership that sent it, growing with each new leader of an HA group; 0 from a daemon with
  // the embedded store.
  int64_t leader_epoch = 0;
  // Load the tasks' state from here before the first trigger (on_welcome runs before any).
  RestorePoint restore;
  // Every checkpoint id of this pipeline the daemon still references, oldest first: state this
  // worker wrote for any other id may be deleted (it may have missed a release while away).
  std::vector<int64_t> retained_checkpoint_ids;
  // The newest checkpoint whose commit phase is durably COMMITTED (0: none).
  int64_t last_committed_checkpoint_id = 0;
  // The pipeline's restore point failed and none replaced it (FAILED, `restore` empty although
  // the pipeline has state). The SDK then does not call on_welcome (the application would start
  // as a fresh pipeline): on_state reports FAILED, until an operator restores the pipeline.
  bool restore_withheld = false;
};

// Take a snapshot of every task of this stream, then Ack (or Decline) it per task.
struct Trigger {
  int64_t checkpoint_id = 0;
  CheckpointKind kind = CheckpointKind::kUnspecified;
  int64_t timestamp_ms = 0;
  int64_t generation = 0;
  std::string target;        // where a savepoint's state should go; empty for checkpoints
  int64_t leader_epoch = 0;  // as Welcome::leader_epoch
  // With a position_interval (a pipeline's, or its alignment group's): snapshot each task when it
  // reaches exactly this position (block height, offset), then Ack; a task already past it
  // declines (Decline with its position). 0: no position, snapshot now.
  int64_t position = 0;
};

// Why a stream ended when the user did not end it.
struct Disconnect {
  StatusCode code = StatusCode::kOk;
  std::string message;
  bool was_connected = false;  // a welcome had arrived on the stream that ended
  bool will_retry = false;     // false: the worker is stopped for good (see PipelineWorker)
  std::chrono::milliseconds retry_in{0};
};

// All optional. Threading: invoked on the runtime's threads, serialized per pipeline (on its
// serialized context, shared with PipelineWorker::Post and RunAfter), never two at once for one
// pipeline. They must not block (a blocked handler holds a runtime thread) and must not throw (an
// exception is printed to stderr and dropped). They may call any method of their PipelineWorker.
// Capture the worker by raw or weak pointer, not by shared_ptr: a handler holding its own worker's
// handle is a reference cycle that keeps it running. What they refer to must live until Stop()
// returned (called off the runtime's threads; dropping the last handle does it), the worker is
// stopped (WaitUntilStopped) or the runtime is destroyed. The handlers themselves are released once
// the worker is stopped.
struct PipelineHandlers {
  // The restore handler: load the tasks' state from welcome.restore. Unlike the others it may
  // throw: an exception is a failed restore, reported to the daemon (restore_result; the SDK
  // reports success too), which marks that checkpoint unrestorable and ends this stream, to come
  // back with an older restore point (docs/PROTOCOL.md, "Verified restore"). Not called while
  // welcome.restore_withheld (on_state says FAILED instead).
  std::function<void(const Welcome&)> on_welcome;
  std::function<void(const Trigger&)> on_trigger;
  std::function<void(int64_t checkpoint_id, const std::string& reason)> on_abort;
  // May name a checkpoint this stream never saw a trigger for (a takeover, a reconnect): it then
  // means "this is now the latest durable checkpoint". This is where the tasks commit what the
  // checkpoint held back (a prepared transaction, files to publish); with a commit phase and
  // auto_commit, `committed` is sent for this stream's tasks once it returns.
  std::function<void(int64_t checkpoint_id, CheckpointKind kind)> on_complete;
  // A commit phase (docs/PROTOCOL.md, "Commit phase"): commit what `checkpoint_id` held back.
  // Called after on_complete for a complete that asks for it, and after on_welcome for a restore
  // point with commit_pending (then again: committing must be idempotent). With auto_commit,
  // `committed` is sent for this stream's tasks once it returns (unset: once on_complete or
  // on_welcome returned); without, call Committed() per task when each commit is done. A handler
  // that throws sends nothing: the checkpoint stays COMMITTING until the next welcome asks again.
  std::function<void(int64_t checkpoint_id)> on_commit;
  // Every task of the pipeline committed `checkpoint_id`, durably: what it held back may be
  // forgotten.
  std::function<void(int64_t checkpoint_id)> on_all_committed;
  std::function<void(const Disconnect&)> on_disconnected;
  // The pipeline's state changed: PAUSED, FAILED or STOPPED (no checkpoints until an operator
  // acts), RUNNING or WAITING_FOR_TASKS after a resume, or kUnspecified when the pipeline was
  // deleted (the stream then ends NOT_FOUND). `reason` says why, in words.
  std::function<void(PipelineState state, const std::string& reason)> on_state;
  // The daemon will not run the savepoint this worker asked for (RequestSavepoint), and why.
  std::function<void(const std::string& reason)> on_savepoint_refused;
  // These checkpoints left the pipeline's history (pushed out of `retained`, deleted with
  // `ckptctl checkpoint delete`, or the pipeline itself deleted): each task may delete the state
  // it wrote for them. Sent once the change is durable; an id may be released twice
  // (after a daemon restart, or on another stream), so deleting must be idempotent.
  std::function<void(const std::vector<int64_t>& checkpoint_ids)> on_release;
};

struct PipelineWorkerOptions {
  std::string worker_id;
  std::string job_id;
  std::string pipeline_id;
  std::vector<std::string> task_ids;  // every task this stream runs
  // Every hello after the first asks for takeover: a live stream holding our tasks is then most
  // likely our own previous stream (or our previous process's), not yet seen dead by the daemon.
  // The first hello never takes over, so a worker started by mistake beside a live one sees
  // ALREADY_EXISTS once; its retry then takes over, and the other worker stops with ABORTED rather
  // than fighting back. With false, every hello is without takeover and ALREADY_EXISTS is retried
  // until the daemon drops the old stream (at the latest when its lease expires).
  bool takeover_on_reconnect = true;
  // Reconnect backoff: doubles from initial up to max, each delay jittered to [d/2, d].
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5000};
  // A pipeline with a commit phase: `committed` is sent for every task of this stream once the
  // handlers of a commit returned (see PipelineHandlers::on_commit). False: call Committed()
  // once each task's commit is done (an asynchronous commit).
  bool auto_commit = true;
};

// Monotonic counters of one pipeline's connection life (for tests and metrics).
struct PipelineWorkerCounters {
  uint64_t attempts = 0;       // streams opened
  uint64_t connects = 0;       // welcomes received
  uint64_t reconnects = 0;     // welcomes received after the first one
  uint64_t disconnects = 0;    // streams that ended without the user asking
  uint64_t dropped_sends = 0;  // acks, declines, savepoint requests dropped: no session was up
  // Welcomes, triggers, aborts and completes of a deposed leader, dropped (see PipelineWorker).
  uint64_t stale_messages = 0;
  uint64_t leader_redirects = 0;  // streams a standby refused that went to the leader it named
};

// One pipeline's Connect stream, reconnected with backoff until stopped.
//
// Threading: every method is safe to call from any thread, including from handlers; none blocks
// except WaitUntilStopped. Requests are carried out in order on the pipeline's serialized context.
//
// Connection: Start() opens a stream and sends hello; after welcome the worker heartbeats once the
// stream has sent nothing for the daemon's heartbeat_interval_ms (every message renews the lease),
// and every interval once SetPosition was called (the positions ride on heartbeats). Acks,
// declines and savepoint requests made in a handler are sent from it, ahead of work it posted. When
// the stream ends without the user asking, on_disconnected reports the status, then:
//   - INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED, UNIMPLEMENTED: stop for good (retrying
//     the same hello cannot succeed);
//   - ABORTED (another stream took our tasks over): stop for good, do not fight back; but ABORTED
//     "restored to checkpoint ..." (an operator restored the pipeline) reconnects, and the next
//     welcome carries the new restore point;
//   - NOT_FOUND (no such pipeline yet): retry at the maximum backoff, as it may be created later;
//   - FAILED_PRECONDITION (the pipeline's stored record is unreadable): retry at the maximum
//     backoff, until an operator deletes and creates it again;
//   - anything else (UNAVAILABLE, DEADLINE_EXCEEDED = lease expired, ALREADY_EXISTS, OK without our
//     goodbye, ...): retry with exponential backoff. The backoff restarts from backoff_initial once
//     a session stayed up for a second.
//
// High availability: with several daemons in WorkerRuntimeOptions::server_address, a stream that
// a standby refuses (UNAVAILABLE naming the leader) is opened again at once at the leader, at most
// three times in a row; a stream that ends UNAVAILABLE with no leader named (the daemon is down, or
// a standby knows no leader yet) is opened again, after the backoff, at the next daemon of the
// list. Once a standby has answered, or (with several daemons listed) a stream that had stayed
// welcomed for a second ended UNAVAILABLE (the leader may be gone), the backoff is capped at a
// second (jittered) for 30 s: a takeover is due within the election TTL, and the new leader is
// found within about a second of it. Each new stream
// takes its tasks over (as any reconnect does): the tasks keep running and are not asked to
// restart. Every message is believed only from the newest leadership seen: a trigger of a lower
// leader_epoch than one seen, and a welcome, abort or complete on a stream whose welcome had one,
// are dropped (not given to the handlers) and counted as stale_messages.
//
// Sends: Ack, Decline and RequestSavepoint go out only on a welcomed stream, before Goodbye.
// Otherwise (connecting, backing off, stopped) they are dropped and counted, not queued: an ack
// belongs to a session, and after a reconnect the daemon has aborted that round anyway (a new
// generation) and will trigger a new one.
//
// Lifetime: the last shared_ptr handle going away stops the worker (like Stop()). A stopped worker
// stays stopped: Start() does nothing; add the pipeline again to serve it again. Handles may
// outlive the WorkerRuntime; their methods then do nothing.
class PipelineWorker {
 public:
  virtual ~PipelineWorker() = default;

  // Connects. Only the first call has an effect.
  virtual void Start() = 0;

  // The task's snapshot for this checkpoint is done; `figures` (optional) say how it went.
  // `position`: where the task snapshotted; left out, the trigger's position (the task snapshotted
  // where it was asked to). An ack at another position than the trigger's declines the round, so
  // an engine that may snapshot elsewhere should say where it did.
  virtual void Ack(int64_t checkpoint_id, std::string task_id, TaskStateInfo state,
                   AckFigures figures = {}, std::optional<int64_t> position = std::nullopt) = 0;
  // The task cannot take this checkpoint (expired: it gave up waiting locally); it fails at once.
  // `position` (optional): where the task is; past the trigger's position, the daemon's next
  // round asks for one interval further.
  virtual void Decline(int64_t checkpoint_id, std::string task_id, std::string reason,
                       bool expired = false, int64_t position = 0) = 0;
  // The highest position (>= 0) the task has committed: reported in the next heartbeat (the
  // positions that changed since the last one, and all of them every tenth heartbeat). A
  // pipeline with a position_interval triggers only once every task reported one far enough.
  // Cheap (a lock and a map entry). A position lower than the task's last is ignored, except the
  // first one set after a welcome: after a reconnect each task reports again (from where it
  // restored, welcome.restore.position, or from where it is), and until it does the daemon
  // knows no position of it.
  virtual void SetPosition(const std::string& task_id, int64_t position) = 0;
  // The tasks are behind, catching up on a backlog (true), or caught up (false): sent in the next
  // heartbeat (at once when it changed). While any worker of a pipeline says so, the daemon
  // checkpoints it at its max_interval_ms, when set (docs/PROTOCOL.md, "Adaptive interval"), so
  // that checkpoints slow the catching up less. Cheap; any thread. Said again after a reconnect.
  virtual void SetBacklog(bool backlog) = 0;
  // Asks the daemon for a savepoint of this pipeline.
  virtual void RequestSavepoint(std::string target, bool stop) = 0;
  // The task committed what checkpoint_id held back (a commit phase; with auto_commit the SDK
  // sends this itself). Sent on a welcomed stream only, as Ack is.
  virtual void Committed(int64_t checkpoint_id, std::string task_id) = 0;

  // Deregisters the tasks cleanly: sends goodbye and lets the daemon end the stream (cancels it if
  // that takes longer than timeout). Never reconnects afterwards. Handlers keep running until the
  // stream ended (a late `complete` is still worth knowing).
  virtual void Goodbye(std::chrono::milliseconds timeout = std::chrono::seconds(5)) = 0;
  // Cancels the stream (the daemon sees the task lost) and never reconnects. No handler starts
  // after Stop() returns. Called off the runtime's threads it also waits for a handler running at
  // that moment, so what the handlers refer to may be destroyed right after; called on a runtime
  // thread (from a handler) it does not wait, and another pipeline's handler may still be running.
  // Dropping the last handle calls Stop().
  virtual void Stop() = 0;

  // Blocks until the worker is stopped for good (after Goodbye, Stop or an error that is not
  // retried) and its stream is gone, or until deadline. True if stopped. Called on a runtime thread
  // (from a handler) it cannot wait and only reports the current state.
  virtual bool WaitUntilStopped(std::chrono::steady_clock::time_point deadline) = 0;

  virtual bool IsConnected() const = 0;  // a welcomed stream is up
  virtual bool IsStopped() const = 0;    // stopped for good
  virtual PipelineWorkerCounters counters() const = 0;

  // Your own work on the pipeline's serialized context, where the handlers run: never beside a
  // handler or other work of this pipeline, so state touched only there needs no lock.
  //
  // Post runs fn after what is already queued there; RunAfter runs it once delay has passed. Like
  // a handler, fn must not block and must not throw. Unlike handlers, fn runs whether or not the
  // worker was stopped, for as long as the runtime lives: work still queued (or waiting for its
  // delay) when the runtime is destroyed never runs, and is destroyed with what it captured during
  // the runtime's destruction. So what fn refers to must live until fn ran or the runtime is
  // destroyed. Once the runtime is gone both do nothing (fn is destroyed at once). An empty fn is
  // ignored.
  virtual void Post(std::function<void()> fn) = 0;
  virtual void RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

// How a WorkerRuntime reaches the daemon, and who it says it is (docs/SECURITY.md, "Clients").
//
// TLS is used when any of ca_file, cert_file and key_file is set; mutual TLS when cert_file and
// key_file are (always both). Every file is read and checked when the runtime is built. The
// certificates and the key are read once (rotate them by building a new runtime); the token file is
// checked for a change at each connect attempt and re-read when it changed, so a rotated token is
// sent from the next stream on (replace the file by a rename, so that no attempt reads it half
// written; if the file no longer holds a valid token, the last good one is sent and stderr says
// why).
// How a runtime's pipelines reach the daemon (docs/PROTOCOL.md, "Worker sessions").
enum class WorkerTransport {
  // One WorkerService.Session call per gRPC channel, a channel of it per pipeline, what is sent
  // meanwhile batched into frames; Connect streams instead where a daemon answers UNIMPLEMENTED
  // (one that predates Session).
  kSession,
  kConnect,  // one WorkerService.Connect stream per pipeline
};

struct WorkerRuntimeOptions {
  // "host:port" (any gRPC target), or the daemons of an HA group as "host:port,host:port": the
  // leader is followed (see PipelineWorker). A list that does not parse (an empty entry, a missing
  // port, an address twice) throws std::invalid_argument.
  std::string server_address;
  int threads = 1;   // the runtime's threads
  int channels = 1;  // gRPC channels (each its own TCP connection) pipelines spread over
  WorkerTransport transport = WorkerTransport::kSession;
  // PEM CA certificate(s) to check the daemon's certificate with. Empty with TLS: gRPC's default
  // roots (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, else the system's).
  std::string ca_file;
  std::string cert_file;  // PEM client certificate (chain); needs key_file
  std::string key_file;   // its PEM private key, unencrypted; needs cert_file
  // A file holding a bearer token, sent as `authorization: Bearer <token>` on every stream
  // (trailing whitespace and newlines are not part of it). Without TLS it is sent only to a
  // loopback address.
  std::string token_file;
  // The name the daemon's certificate must hold, instead of the host of server_address. Needs TLS.
  std::string tls_server_name;
};

// Owns the threads and channels that serve every pipeline of a process.
//
// Threading: AddPipeline is safe from any thread, including handlers. The destructor stops every
// pipeline (cancels the streams: use Goodbye first for a clean deregistration), waits for their
// streams to end, and joins the threads: no handler runs after it returns. It must not be called
// from a handler (it would wait for itself).
class WorkerRuntime {
 public:
  // Throws std::invalid_argument, whose what() names the option and the file, when a file of
  // `options` cannot be used: missing, unreadable, not a regular file, larger than 1 MiB, not PEM,
  // an encrypted key, a key that is not the certificate's, an expired certificate, cert_file
  // without key_file (or the reverse), an empty token or one with spaces or control characters;
  // also for tls_server_name without TLS, and for a token without TLS to an address that is not
  // loopback. A daemon that refuses the credentials ends each stream UNAUTHENTICATED or
  // PERMISSION_DENIED, which stops that worker for good (see PipelineWorker).
  explicit WorkerRuntime(WorkerRuntimeOptions options);
  // A plaintext runtime without credentials: the options above with only these three set.
  explicit WorkerRuntime(std::string server_address, int threads = 1, int channels = 1);
  ~WorkerRuntime();
  WorkerRuntime(const WorkerRuntime&) = delete;
  WorkerRuntime& operator=(const WorkerRuntime&) = delete;

  // A new, not yet started worker for one pipeline. Handlers are fixed for the worker's life.
  std::shared_ptr<PipelineWorker> AddPipeline(PipelineWorkerOptions options,
                                              PipelineHandlers handlers);

  const std::string& server_address() const;

 private:
  std::shared_ptr<internal::RuntimeCore> core_;
};

}  // namespace ckpt::sdk
