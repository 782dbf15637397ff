#pragma once
// Listening sockets for the daemon's two ports (gRPC and HTTP), set up the same way.
//
// Threading: call on the controlling thread, before the acceptor is used by its io_context.

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "common/host_port.h"
#include "common/status.h"

namespace ckpt {

// Opens, binds and listens `acceptor` on HOST:PORT (port 0: a free one), non-blocking. Never with
// SO_REUSEPORT: a second process must not share the port. SO_REUSEADDR only lets a restart bind
// while connections of the previous process linger in TIME_WAIT. `what` names the port in errors
// ("listen", "metrics_listen"). Returns the bound port. A port in use is UNAVAILABLE with
// "address already in use" in its message.
Result<int> ListenTcp(boost::asio::ip::tcp::acceptor& acceptor, const std::string& address,
                      const std::string& what);

}  // namespace ckpt
