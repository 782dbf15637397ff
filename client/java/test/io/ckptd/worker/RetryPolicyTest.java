package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.grpc.Status.Code;
import org.junit.Test;

/** The table of docs/PROTOCOL.md, "How a stream ends, and what to do". */
public class RetryPolicyTest {
  private static void assertAction(RetryPolicy.Action action, Code code, String message) {
    assertEquals(code + " \"" + message + "\"", action, RetryPolicy.classify(code, message));
  }

  @Test
  public void aHelloThatCannotSucceedGivesUp() {
    for (Code code :
        new Code[] {
          Code.INVALID_ARGUMENT, Code.PERMISSION_DENIED, Code.UNAUTHENTICATED, Code.UNIMPLEMENTED
        }) {
      assertAction(RetryPolicy.Action.GIVE_UP, code, "whatever the daemon said");
    }
  }

  @Test
  public void aTakeoverByAnotherWorkerGivesUp() {
    assertAction(RetryPolicy.Action.GIVE_UP, Code.ABORTED, "tasks taken over by worker w2");
    assertAction(RetryPolicy.Action.GIVE_UP, Code.ABORTED, null);
    // The restore prefix counts only at the start of the message.
    assertAction(RetryPolicy.Action.GIVE_UP, Code.ABORTED, "not restored to checkpoint job/p@7");
  }

  @Test
  public void aRestoreComesBack() {
    assertAction(RetryPolicy.Action.RETRY, Code.ABORTED, "restored to checkpoint job/p@7");
    assertTrue(RetryPolicy.isRestore(Code.ABORTED, "restored to checkpoint job/p@7"));
    assertFalse(RetryPolicy.isRestore(Code.UNAVAILABLE, "restored to checkpoint job/p@7"));
    assertFalse(RetryPolicy.isRestore(Code.ABORTED, null));
  }

  @Test
  public void aMissingPipelineIsRetriedSlowly() {
    assertAction(RetryPolicy.Action.RETRY_SLOWLY, Code.NOT_FOUND, "no pipeline job/p");
  }

  @Test
  public void anUnreadablePipelineIsRetriedSlowly() {
    // Only an operator clears it (delete and create the pipeline again): docs/PROTOCOL.md.
    assertAction(
        RetryPolicy.Action.RETRY_SLOWLY,
        Code.FAILED_PRECONDITION,
        "pipeline job/p is UNREADABLE: its stored record cannot be read");
  }

  @Test
  public void everythingElseIsRetried() {
    for (Code code :
        new Code[] {
          Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.ALREADY_EXISTS, Code.CANCELLED, Code.OK,
          Code.RESOURCE_EXHAUSTED, Code.INTERNAL, Code.UNKNOWN
        }) {
      assertAction(RetryPolicy.Action.RETRY, code, "");
    }
  }
}
