"""The ckpt worker SDK for Python: serve pipelines of a ckptd daemon from a worker process.

    from ckpt_worker import PipelineWorker, TaskState

    worker = None

    def on_trigger(t):
        # snapshot the task at t.position (0: now), then:
        worker.ack(t.checkpoint_id, "0", TaskState(uri=f"s3://bucket/chk-{t.checkpoint_id}"))

    worker = PipelineWorker("127.0.0.1:7070", worker_id="w1", job_id="etl", pipeline_id="p0",
                            task_ids=["0"], on_trigger=on_trigger)
    worker.start()
    ...
    worker.goodbye()

docs/PROTOCOL.md describes the protocol this speaks.
"""
from .types import (AckFigures, Counters, Disconnect, RestorePoint, TaskState, Trigger, Welcome,
                    CHECKPOINT, SAVEPOINT, SAVEPOINT_AND_STOP)
from .worker import PipelineWorker

__all__ = ["PipelineWorker", "TaskState", "AckFigures", "RestorePoint", "Welcome", "Trigger",
           "Disconnect", "Counters", "CHECKPOINT", "SAVEPOINT", "SAVEPOINT_AND_STOP"]
__version__ = "0.1.0"
