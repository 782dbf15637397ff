"""A PipelineWorker's side of one stream: the hello, the welcome, a round's messages, and the
acks, declines and savepoint requests it sends back (docs/PROTOCOL.md)."""
import contextlib
import io
import unittest

from ckpt.v1 import common_pb2, worker_pb2
from ckpt_worker import AckFigures, RestorePoint, TaskState, Trigger, Welcome
from ckpt_worker.worker import kind_name, state_name

import coordinator_messages as msg
from worker_harness import SERVER, WorkerTestCase


class HelloAndWelcomeTest(WorkerTestCase):
    def test_the_first_hello_registers_the_tasks_without_takeover(self):
        self.start_worker()
        call = self.transport.next_call()
        self.assertEqual(call.target, SERVER)
        (hello,) = call.wait_sent("hello")
        self.assertEqual(call.sent()[0], hello)  # before anything else
        self.assertEqual(hello.hello, worker_pb2.Hello(
            worker_id="w1", job_id="job", pipeline_id="p", task_ids=["0", "1"], takeover=False))
        self.assertEqual(call.metadata, {})  # no token file: no authorization

    def test_the_welcome_is_handed_over_as_plain_values(self):
        worker = self.start_worker()
        call = self.transport.next_call()
        self.assertFalse(worker.is_connected())
        restore = common_pb2.RestorePoint(
            checkpoint_id=41, kind=common_pb2.CHECKPOINT_KIND_SAVEPOINT, location="s3://b/sp",
            task_states={"0": common_pb2.TaskState(uri="s3://b/0", size_bytes=5, checksum="c0")},
            source_job_id="old", source_pipeline_id="p9", rescaled=True, operator_set=True,
            position=1200)
        call.reply(msg.welcome(
            epoch=3, heartbeat_ms=2500, session_id="s-1", generation=7,
            state=common_pb2.PIPELINE_STATE_RUNNING, last_completed_checkpoint_id=41,
            last_completed_kind=common_pb2.CHECKPOINT_KIND_SAVEPOINT, lease_ttl_ms=9000,
            retained_checkpoint_ids=[39, 41], restore=restore))
        ((welcome,),) = self.recorder.wait_for("welcome")
        self.assertEqual(welcome, Welcome(
            session_id="s-1", generation=7, state="RUNNING", last_completed_checkpoint_id=41,
            last_completed_kind="SAVEPOINT", heartbeat_interval_ms=2500, lease_ttl_ms=9000,
            leader_epoch=3,
            restore=RestorePoint(
                checkpoint_id=41, kind="SAVEPOINT", location="s3://b/sp",
                task_states={"0": TaskState("s3://b/0", 5, "c0")}, source_job_id="old",
                source_pipeline_id="p9", rescaled=True, operator_set=True, position=1200),
            retained_checkpoint_ids=[39, 41]))
        self.assertTrue(worker.is_connected())
        self.assertEqual((worker.counters.attempts, worker.counters.connects,
                          worker.counters.reconnects), (1, 1, 0))

    def test_unknown_kinds_and_states_read_as_unspecified(self):
        # A newer daemon's values: the SDK does not fail on them.
        self.assertEqual(kind_name(99), "UNSPECIFIED")
        self.assertEqual(state_name(99), "UNSPECIFIED")
        self.assertEqual(kind_name(common_pb2.CHECKPOINT_KIND_SAVEPOINT_AND_STOP),
                         "SAVEPOINT_AND_STOP")
        self.assertEqual(state_name(common_pb2.PIPELINE_STATE_WAITING_FOR_TASKS),
                         "WAITING_FOR_TASKS")


class RoundTest(WorkerTestCase):
    def setUp(self):
        self.worker = self.start_worker()
        self.call = self.welcome_next_call()

    def test_a_trigger_reaches_on_trigger(self):
        self.call.reply(msg.trigger(5, kind=common_pb2.CHECKPOINT_KIND_SAVEPOINT, timestamp_ms=123,
                                    generation=2, target="s3://sp", position=300))
        ((trigger,),) = self.recorder.wait_for("trigger")
        self.assertEqual(trigger, Trigger(checkpoint_id=5, kind="SAVEPOINT", timestamp_ms=123,
                                          generation=2, target="s3://sp", leader_epoch=0,
                                          position=300))

    def test_an_ack_goes_out_at_the_trigger_s_position(self):
        self.call.reply(msg.trigger(5, position=300))
        self.recorder.wait_for("trigger")
        self.worker.ack(5, "0", TaskState("s3://b/5/0", 10, "crc"), AckFigures(1, 2, 3, 4))
        (ack,) = self.call.wait_sent("ack")
        self.assertEqual(ack.ack, worker_pb2.Ack(
            checkpoint_id=5, task_id="0",
            state=common_pb2.TaskState(uri="s3://b/5/0", size_bytes=10, checksum="crc"),
            sync_duration_ms=1, async_duration_ms=2, alignment_duration_ms=3,
            bytes_processed_during_alignment=4, position=300))

    def test_an_ack_may_name_its_own_position(self):
        self.call.reply(msg.trigger(5, position=300))
        self.recorder.wait_for("trigger")
        self.worker.ack(5, "1", TaskState("u"), position=310)
        (ack,) = self.call.wait_sent("ack")
        self.assertEqual(ack.ack.position, 310)

    def test_only_the_last_sixteen_triggers_positions_are_remembered(self):
        for checkpoint_id in range(1, 18):
            self.call.reply(msg.trigger(checkpoint_id, position=100 * checkpoint_id))
        self.recorder.wait_for("trigger", 17)
        self.worker.ack(1, "0", TaskState("u"))   # forgotten: position 0
        self.worker.ack(2, "0", TaskState("u"))   # the oldest remembered
        self.worker.ack(99, "0", TaskState("u"))  # never triggered: position 0
        acks = self.call.wait_sent("ack", 3)
        self.assertEqual([a.ack.position for a in acks], [0, 200, 0])

    def test_a_decline_and_a_savepoint_request_go_out(self):
        self.worker.decline(5, "1", "disk full", expired=True, position=301)
        self.worker.request_savepoint("s3://sp", stop=True)
        (decline,) = self.call.wait_sent("decline")
        (request,) = self.call.wait_sent("savepoint_request")
        self.assertEqual(decline.decline, worker_pb2.Decline(
            checkpoint_id=5, task_id="1", reason="disk full", expired=True, position=301))
        self.assertEqual(request.savepoint_request,
                         worker_pb2.SavepointRequest(target="s3://sp", stop=True))
        self.assertEqual(self.worker.counters.dropped_sends, 0)

    def test_an_ack_needs_a_task_state(self):
        with self.assertRaises(TypeError):
            self.worker.ack(5, "0", "s3://b/5/0")

    def test_the_ends_of_rounds_and_state_changes_reach_their_handlers(self):
        self.call.reply(msg.abort(5, "timed out"))
        self.call.reply(msg.complete(6, common_pb2.CHECKPOINT_KIND_SAVEPOINT_AND_STOP))
        self.call.reply(msg.release(1, 2))
        self.call.reply(msg.state(common_pb2.PIPELINE_STATE_PAUSED, "operator"))
        self.call.reply(msg.savepoint_refused("a savepoint is running"))
        self.recorder.wait_for("savepoint_refused")
        self.assertEqual(self.recorder.events()[1:], [
            ("abort", (5, "timed out")),
            ("complete", (6, "SAVEPOINT_AND_STOP")),
            ("release", ([1, 2],)),
            ("state", ("PAUSED", "operator")),
            ("savepoint_refused", ("a savepoint is running",)),
        ])
        self.assertEqual(self.worker.counters.stale_messages, 0)

    def test_a_message_this_sdk_does_not_know_is_ignored(self):
        self.call.reply(worker_pb2.CoordinatorMessage())  # no msg set: a newer daemon's
        self.wait_handled(self.call)
        self.assertEqual(self.events_but_barriers()[1:], [])
        self.assertTrue(self.worker.is_connected())


class BeforeTheWelcomeTest(WorkerTestCase):
    def test_sends_are_dropped_and_counted(self):
        worker = self.start_worker()
        worker.ack(5, "0", TaskState("u"))  # perhaps before the first call: dropped as well
        call = self.transport.next_call()
        worker.decline(5, "0", "no")
        worker.request_savepoint()
        self.assertEqual(worker.counters.dropped_sends, 3)
        call.reply(msg.welcome())
        self.wait_handled(call)
        self.assertEqual([m.WhichOneof("msg") for m in call.sent()], ["hello"])

    def test_the_ends_of_rounds_are_dropped_as_stale(self):
        worker = self.start_worker()
        call = self.transport.next_call()
        call.reply(msg.abort(5))
        call.reply(msg.complete(5))
        call.reply(msg.release(5))
        self.wait_handled(call)
        self.assertEqual(self.events_but_barriers(), [])
        self.assertEqual(worker.counters.stale_messages, 3)


class HandlerErrorTest(WorkerTestCase):
    def test_a_handler_that_raises_does_not_end_the_stream(self):
        def on_trigger(_):
            raise RuntimeError("the application's bug")

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            worker = self.start_worker(on_trigger=on_trigger)
            call = self.welcome_next_call()
            call.reply(msg.trigger(5))
            call.reply(msg.abort(5))
            self.recorder.wait_for("abort")
        self.assertIn("the application's bug", stderr.getvalue())
        self.assertTrue(worker.is_connected())
        self.assertEqual(worker.counters.attempts, 1)

    def test_a_stream_that_fails_outside_grpc_is_retried_as_unknown(self):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.start_worker()
            call = self.welcome_next_call()
            call.reply(object())  # not a message: dispatching it raises
            ((disconnect,),) = self.recorder.wait_for("disconnected")
        self.assertEqual(disconnect.code.name, "UNKNOWN")
        self.assertTrue(disconnect.message.startswith("AttributeError"), disconnect.message)
        self.assertTrue(disconnect.was_connected)
        self.assertTrue(disconnect.will_retry)
        self.assertTrue(call.cancelled)
        self.assertTrue(self.transport.next_call().wait_sent("hello")[0].hello.takeover)


if __name__ == "__main__":
    unittest.main()
