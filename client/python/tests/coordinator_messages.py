"""The daemon's messages, built the way a test needs them (docs/PROTOCOL.md has their fields)."""
from ckpt.v1 import common_pb2, worker_pb2

# A welcome's heartbeat interval when a test does not look at heartbeats: none goes out meanwhile.
QUIET_HEARTBEAT_MS = 60_000


def welcome(epoch=0, heartbeat_ms=QUIET_HEARTBEAT_MS, **fields):
    return worker_pb2.CoordinatorMessage(welcome=worker_pb2.Welcome(
        leader_epoch=epoch, heartbeat_interval_ms=heartbeat_ms, **fields))


def trigger(checkpoint_id, epoch=0, position=0, kind=common_pb2.CHECKPOINT_KIND_CHECKPOINT,
            **fields):
    return worker_pb2.CoordinatorMessage(trigger=worker_pb2.Trigger(
        checkpoint_id=checkpoint_id, leader_epoch=epoch, position=position, kind=kind, **fields))


def abort(checkpoint_id, reason="the test aborts it"):
    return worker_pb2.CoordinatorMessage(
        abort=worker_pb2.Abort(checkpoint_id=checkpoint_id, reason=reason))


def complete(checkpoint_id, kind=common_pb2.CHECKPOINT_KIND_CHECKPOINT, commit=False):
    return worker_pb2.CoordinatorMessage(
        complete=worker_pb2.Complete(checkpoint_id=checkpoint_id, kind=kind, commit=commit))


def all_committed(checkpoint_id):
    return worker_pb2.CoordinatorMessage(
        all_committed=worker_pb2.AllCommitted(checkpoint_id=checkpoint_id))


def release(*checkpoint_ids):
    return worker_pb2.CoordinatorMessage(
        release=worker_pb2.Release(checkpoint_ids=list(checkpoint_ids)))


def state(pipeline_state, reason=""):
    return worker_pb2.CoordinatorMessage(
        state=worker_pb2.StateChange(state=pipeline_state, reason=reason))


def savepoint_refused(reason):
    return worker_pb2.CoordinatorMessage(
        savepoint_refused=worker_pb2.SavepointRefused(reason=reason))
