#pragma once
// `--server` of ckptctl and ckpt-worker-sim, and the SDK's server_address: one daemon, or several
// of one HA group as "host:port,host:port" (docs/man/ckptctl.1, "OPTIONS"). The clients ask
// them in order and follow the leader any of them names.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::cli {

// The addresses of `text`, in its order, each without surrounding blanks.
//
// Text without a comma is one gRPC target, passed on unchanged ("unix:/run/ckptd.sock",
// "dns:///ckptd:7070", ...): a single address works exactly as it did before lists existed. So is
// text starting with "ipv4:" or "ipv6:", whose commas are gRPC's own address list.
//
// In a list, every entry is HOST:PORT ("[v6]:PORT" for IPv6) with a port of 1..65535, or a target
// with a scheme ("unix:", "dns:", ...). Empty entries, a missing or bad port and duplicates are
// refused: std::nullopt with one line naming `option` and the entry in *error.
std::optional<std::vector<std::string>> ParseServerList(std::string_view text,
                                                        std::string_view option,
                                                        std::string* error);

}  // namespace ckpt::cli
