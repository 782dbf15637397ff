#pragma once
// What the store tests share: waiting for a write's callback with a deadline.

#include <chrono>
#include <functional>
#include <future>
#include <memory>

#include "store/metadata_store.h"

namespace ckpt {

// Generous: TSan and a loaded CI machine are slow, and a passing test never waits this long.
inline constexpr auto kStoreTestDeadline = std::chrono::seconds(30);

// Issues a write and waits (with a deadline) for its callback.
inline Status Await(const std::function<void(MetadataStore::Done)>& issue) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  issue([promise](Status s) { promise->set_value(std::move(s)); });
  if (future.wait_for(kStoreTestDeadline) != std::future_status::ready) {
    return Status::DeadlineExceeded("store callback did not run within the deadline");
  }
  return future.get();
}

}  // namespace ckpt
