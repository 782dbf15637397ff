#pragma once
// What the files of EtcdBackend share and nothing else includes: the request builders of the
// write path (etcd_apply_batch.cc, etcd_commit_plan.cc, etcd_batch_writer.cc) and the parse of
// a stored id counter (the rereads after a refusal, the load, LoadIdCounter). Pure functions;
// any thread.

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

#include "etcd/etcd_v3.pb.h"

namespace ckpt::etcd_backend_internal {

inline etcdserverpb::RequestOp Put(std::string key, std::string value) {
  etcdserverpb::RequestOp op;
  auto* put = op.mutable_request_put();
  put->set_key(std::move(key));
  put->set_value(std::move(value));
  return op;
}

inline etcdserverpb::RequestOp Delete(std::string key, std::string range_end = "") {
  etcdserverpb::RequestOp op;
  auto* del = op.mutable_request_delete_range();
  del->set_key(std::move(key));
  if (!range_end.empty()) del->set_range_end(std::move(range_end));
  return op;
}

// A counter as the layout stores it: decimal, not negative.
inline bool ParseCounter(const std::string& text, int64_t* value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && *value >= 0;
}

}  // namespace ckpt::etcd_backend_internal
