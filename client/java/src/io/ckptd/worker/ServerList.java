package io.ckptd.worker;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

/** The daemons a worker may connect to: "host:port", or an HA group's "a:port,b:port,c:port". */
final class ServerList {
  private ServerList() {}

  /** The addresses of {@code servers}, in order; IllegalArgumentException naming a bad one. */
  static List<String> parse(String servers) {
    List<String> out = new ArrayList<>();
    for (String part : servers.split(",", -1)) {
      String s = part.strip();
      int colon = s.lastIndexOf(':');
      String port = colon < 0 ? "" : s.substring(colon + 1);
      if (colon <= 0 || !isPort(port)) {
        throw new IllegalArgumentException(
            "server address '" + s + "' is not HOST:PORT (in '" + servers + "')");
      }
      out.add(s);
    }
    if (new HashSet<>(out).size() != out.size()) {
      throw new IllegalArgumentException("a server address is named twice in '" + servers + "'");
    }
    return List.copyOf(out);
  }

  /** ASCII digits of 1..65535 (Character.isDigit also takes other scripts' digits). */
  private static boolean isPort(String text) {
    if (text.isEmpty() || text.length() > 5 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return false;
    }
    int port = Integer.parseInt(text);
    return port >= 1 && port <= 65535;
  }

  /**
   * True for localhost and loopback IP literals. Names other than localhost are not resolved: a
   * bearer token goes in the clear only where the address itself says loopback.
   */
  static boolean isLoopback(String target) {
    int colon = target.lastIndexOf(':');
    String host = colon < 0 ? target : target.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    if (host.equals("localhost")) {
      return true;
    }
    if (host.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
      // Parsed here: InetAddress looks up what it does not parse (999.0.0.1) in DNS.
      String[] octets = host.split("\\.");
      for (String octet : octets) {
        if (Integer.parseInt(octet) > 255) {
          return false;
        }
      }
      return Integer.parseInt(octets[0]) == 127;
    }
    if (!host.contains(":") || !host.matches("[0-9a-fA-F:.]+")) {
      // A name, which InetAddress would look up: also one of hex digits only ("cafe"), whose
      // answer need not be the address the channel connects to later.
      return false;
    }
    try {
      // An IPv6 literal: InetAddress parses it, or refuses it without a lookup.
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }
}
