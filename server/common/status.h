#pragma once
// Status and Result: errors as values inside the daemon. gRPC statuses exist only at the rpc edge
// (server/rpc), which maps these codes one to one.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ckpt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kAborted,
  kDeadlineExceeded,
  kUnavailable,
  kInternal,
  kResourceExhausted,
  // Stored data is damaged or missing (a corrupt page, a database gone from a data_dir that held
  // a store): the daemon stops rather than start over (exit code 65).
  kDataLoss,
  kUnauthenticated,   // no credentials, or ones no principal has
  kPermissionDenied,  // a known principal, not allowed this
};

const char* StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status Unauthenticated(std::string m) {
    return {StatusCode::kUnauthenticated, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: no pipeline j/p", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Called by Result on misuse; prints `what` and aborts. A bug, never a runtime condition.
[[noreturn]] void ResultMisuse(const char* what, const Status& status);

// A value or the Status that explains why there is none. Misuse does not pass silently: reading
// the value of an error aborts with the error (like absl::StatusOr), and an OK Status given
// instead of a value becomes an INTERNAL error, so that the caller sees a failure, not an empty
// success.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status)                          // NOLINT
      : status_(status.ok()
                    ? Status::Internal("a Result was built from an OK status, with no value")
                    : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() {
    CheckHasValue();
    return *value_;
  }
  const T& value() const {
    CheckHasValue();
    return *value_;
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  void CheckHasValue() const {
    if (!value_) ResultMisuse("the value of a Result that holds an error was read", status_);
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace ckpt
