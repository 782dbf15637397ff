package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import com.google.protobuf.InvalidProtocolBufferException;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/** From the generated messages to the SDK's plain values. */
public class ProtosTest {
  @Test
  public void aWelcomeWithItsRestorePoint() {
    io.ckptd.v1.RestorePoint restore =
        io.ckptd.v1.RestorePoint.newBuilder()
            .setCheckpointId(41)
            .setKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_SAVEPOINT)
            .setLocation("s3://b/sp")
            .putTaskStates(
                "0",
                io.ckptd.v1.TaskState.newBuilder()
                    .setUri("s3://b/0")
                    .setSizeBytes(5)
                    .setChecksum("c0")
                    .build())
            .setSourceJobId("old")
            .setSourcePipelineId("p9")
            .setRescaled(true)
            .setOperatorSet(true)
            .setPosition(1200)
            .setCommitPending(true)
            .build();
    io.ckptd.v1.Welcome welcome =
        io.ckptd.v1.Welcome.newBuilder()
            .setSessionId("s-1")
            .setGeneration(7)
            .setState(io.ckptd.v1.PipelineState.PIPELINE_STATE_RUNNING)
            .setLastCompletedCheckpointId(41)
            .setLastCompletedKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_SAVEPOINT)
            .setHeartbeatIntervalMs(2500)
            .setLeaseTtlMs(9000)
            .setLeaderEpoch(3)
            .setRestore(restore)
            .addAllRetainedCheckpointIds(List.of(39L, 41L))
            .setLastCommittedCheckpointId(39)
            .build();
    assertEquals(
        new Welcome(
            "s-1", 7, PipelineState.RUNNING, 41, CheckpointKind.SAVEPOINT, 2500, 9000, 3,
            new RestorePoint(
                41, CheckpointKind.SAVEPOINT, "s3://b/sp",
                Map.of("0", new TaskState("s3://b/0", 5, "c0")), "old", "p9", true, true, 1200,
                true),
            List.of(39L, 41L), 39),
        Protos.welcome(welcome));
  }

  @Test
  public void aTrigger() {
    io.ckptd.v1.Trigger trigger =
        io.ckptd.v1.Trigger.newBuilder()
            .setCheckpointId(5)
            .setKind(io.ckptd.v1.CheckpointKind.CHECKPOINT_KIND_SAVEPOINT_AND_STOP)
            .setTimestampMs(123)
            .setGeneration(2)
            .setTarget("s3://sp")
            .setLeaderEpoch(4)
            .setPosition(300)
            .build();
    assertEquals(
        new Trigger(5, CheckpointKind.SAVEPOINT_AND_STOP, 123, 2, "s3://sp", 4, 300),
        Protos.trigger(trigger));
  }

  @Test
  public void aTaskStateBothWays() {
    TaskState state = new TaskState("s3://b/0", 5, "c0");
    assertEquals(state, Protos.taskState(Protos.taskState(state)));
  }

  @Test
  public void aNewerDaemonsKindReadsAsUnspecified() throws InvalidProtocolBufferException {
    // Field 2 (kind) = 99 on the wire: a value this SDK's protos do not know.
    io.ckptd.v1.Trigger trigger = io.ckptd.v1.Trigger.parseFrom(new byte[] {0x10, 99});
    assertEquals(CheckpointKind.UNSPECIFIED, Protos.trigger(trigger).kind());
    assertEquals(
        PipelineState.UNSPECIFIED,
        PipelineState.fromProto(io.ckptd.v1.PipelineState.UNRECOGNIZED));
    assertEquals(
        PipelineState.WAITING_FOR_TASKS,
        PipelineState.fromProto(io.ckptd.v1.PipelineState.PIPELINE_STATE_WAITING_FOR_TASKS));
  }

  @Test
  public void theValuesAreImmutableCopies() {
    List<Long> ids = new java.util.ArrayList<>(List.of(1L));
    Welcome welcome =
        new Welcome("s", 0, PipelineState.RUNNING, 0, CheckpointKind.UNSPECIFIED, 0, 0, 0,
            new RestorePoint(
                0, CheckpointKind.UNSPECIFIED, "", Map.of(), "", "", false, false, 0, false),
            ids, 0);
    ids.add(2L);
    assertEquals(List.of(1L), welcome.retainedCheckpointIds());
    assertThrows(UnsupportedOperationException.class,
        () -> welcome.restore().taskStates().put("0", new TaskState("u")));
    assertThrows(NullPointerException.class, () -> new TaskState(null));
  }
}
