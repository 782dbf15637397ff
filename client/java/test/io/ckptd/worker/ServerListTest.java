package io.ckptd.worker;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.List;
import org.junit.Test;

/** The daemons a worker may connect to, and which of them may see a token in the clear. */
public class ServerListTest {
  @Test
  public void oneOrSeveralAddressesInOrder() {
    assertEquals(List.of("127.0.0.1:7070"), ServerList.parse("127.0.0.1:7070"));
    assertEquals(List.of("a:1", "b:2", "[::1]:3"), ServerList.parse("a:1, b:2 ,[::1]:3"));
  }

  @Test
  public void refusesWhatIsNotHostPort() {
    // Ports are ASCII digits of 1..65535, as the C++ SDK and ckptctl take them: not Arabic-Indic
    // or fullwidth digits (which Character.isDigit accepts), not 0, not above 65535.
    String[] notHostPort = {
      "", "a", "a:", ":7070", "a:70x", "a:1,,b:2", "a:1,", "a:-1",
      "a:\u0667\u0660\u0667\u0660", "a:\uff17\uff10", "a:0", "a:65536", "a:000007070"
    };
    for (String servers : notHostPort) {
      IllegalArgumentException e =
          assertThrows(servers, IllegalArgumentException.class, () -> ServerList.parse(servers));
      assertTrue(e.getMessage(), e.getMessage().contains("is not HOST:PORT"));
    }
  }

  @Test
  public void refusesAnAddressNamedTwice() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ServerList.parse("a:1,b:2, a:1"));
    assertTrue(e.getMessage(), e.getMessage().contains("named twice"));
  }

  @Test
  public void loopbackAddresses() {
    String[] loopback = {"127.0.0.1:7070", "127.9.8.7:1", "localhost:7070", "[::1]:7070"};
    for (String target : loopback) {
      assertTrue(target, ServerList.isLoopback(target));
    }
  }

  @Test
  public void anythingElseIsNot() {
    // Names are never resolved, nor half-written addresses that a resolver would complete.
    for (String target :
        new String[] {
          "10.0.0.1:7070", "[::2]:1", "localhost.example.com:1", "ckptd:7070", "128.0.0.1:1",
          "999.0.0.1:1", "127.1:1", "cafe:1"
        }) {
      assertFalse(target, ServerList.isLoopback(target));
    }
  }
}
