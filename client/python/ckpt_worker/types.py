"""What the daemon tells a worker, as plain Python values (docs/PROTOCOL.md has the semantics)."""
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import grpc

# The kinds of a round and the states of a pipeline, by the names of the protocol.
CHECKPOINT = "CHECKPOINT"
SAVEPOINT = "SAVEPOINT"
SAVEPOINT_AND_STOP = "SAVEPOINT_AND_STOP"


@dataclass(frozen=True)
class TaskState:
    """A task's snapshot: opaque to the daemon, stored with the completed checkpoint and handed
    back in the restore point."""
    uri: str
    size_bytes: int = 0
    checksum: str = ""


@dataclass(frozen=True)
class AckFigures:
    """What a task may tell operators about its part of a checkpoint (0: not reported)."""
    sync_duration_ms: int = 0
    async_duration_ms: int = 0
    alignment_duration_ms: int = 0
    bytes_processed_during_alignment: int = 0


@dataclass(frozen=True)
class RestorePoint:
    """Where this stream's tasks restore from. checkpoint_id 0: a fresh pipeline, start empty."""
    checkpoint_id: int = 0
    kind: str = ""
    location: str = ""
    # task id -> its state: this stream's tasks, or every state of the source when `rescaled`.
    task_states: Dict[str, TaskState] = field(default_factory=dict)
    source_job_id: str = ""
    source_pipeline_id: str = ""
    rescaled: bool = False
    operator_set: bool = False
    position: int = 0  # where the checkpoint was taken (0: none): resume reading from here
    # The checkpoint is still COMMITTING (a commit phase): commit what its state held back, again
    # if need be (it may have been done before a crash), then `committed` goes out per task.
    commit_pending: bool = False


@dataclass(frozen=True)
class Welcome:
    """The daemon accepted the stream. Load the tasks' state from `restore` before any trigger."""
    session_id: str
    generation: int
    state: str
    # Also a completion notice: after a daemon crash it may name a round no `complete` came for.
    last_completed_checkpoint_id: int
    last_completed_kind: str
    heartbeat_interval_ms: int
    lease_ttl_ms: int
    leader_epoch: int
    restore: RestorePoint
    # Every id the daemon still references, oldest first (see docs/PROTOCOL.md before deleting).
    retained_checkpoint_ids: List[int]
    # The newest checkpoint whose commit phase is durably COMMITTED (0: none).
    last_committed_checkpoint_id: int = 0
    # The restore point failed and none replaced it: FAILED, `restore` empty although the
    # pipeline has state. The SDK then does not call on_welcome (on_state says FAILED).
    restore_withheld: bool = False


@dataclass(frozen=True)
class Trigger:
    """Snapshot every task of this stream, then ack (or decline) per task."""
    checkpoint_id: int
    kind: str
    timestamp_ms: int
    generation: int
    target: str  # where a savepoint's state should go; empty for checkpoints
    leader_epoch: int
    # With a position_interval: snapshot each task when it reaches exactly this position, then
    # ack; a task already past it declines with its position. 0: snapshot now.
    position: int


@dataclass(frozen=True)
class Disconnect:
    """Why a stream ended when the worker did not end it, and what happens next."""
    code: grpc.StatusCode
    message: str
    was_connected: bool  # a welcome had arrived on the stream that ended
    will_retry: bool     # False: the worker is stopped for good
    retry_in_s: float
    leader: Optional[str] = None  # a standby named the leader it goes to


@dataclass
class Counters:
    """Monotonic counters of one pipeline's connection life."""
    attempts: int = 0
    connects: int = 0
    reconnects: int = 0
    disconnects: int = 0
    dropped_sends: int = 0
    stale_messages: int = 0
    leader_redirects: int = 0
