#include "net/tcp_listen.h"

#include <boost/asio/ip/tcp.hpp>

namespace ckpt {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Result<int> ListenTcp(tcp::acceptor& acceptor, const std::string& address,
                      const std::string& what) {
  auto host_port = ParseHostPort(address);
  if (!host_port.ok()) return Status::InvalidArgument(what + ": " + host_port.status().message());
  boost::system::error_code ec;
  tcp::resolver resolver(acceptor.get_executor());
  // Synchronous, once at start: "localhost" resolves from /etc/hosts.
  auto endpoints = resolver.resolve(host_port->host, host_port->port,
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Status::Unavailable(what + " " + address + ": cannot resolve: " + ec.message());
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) acceptor.non_blocking(true, ec);
  if (ec) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    const std::string reason = ec == asio::error::address_in_use
                                   ? "address already in use (another process holds the port)"
                                   : ec.message();
    return Status::Unavailable("cannot listen on " + address + " (" + what + "): " + reason);
  }
  return static_cast<int>(acceptor.local_endpoint(ec).port());
}

}  // namespace ckpt
