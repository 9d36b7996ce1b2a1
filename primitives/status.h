// The toolkit's one error convention.
//
// Every public operation that can fail on a caller's input or on the
// environment (bad CPU id, zero or huge size, bad alignment, double free,
// mmap failure, malformed sysfs text, ...) returns a percpu::Status, or a
// percpu::StatusOr<T> when it also produces a value. Library code never
// aborts on a caller's input. The message names the operation and the
// offending value, e.g. "PerCpuAllocator::Allocate: size 0 is not in
// [1, 65536]".
//
// Violations of a documented programmer contract that cannot be reported
// through a return value (two concurrent writers of one seqcount, use of a
// freed object) are caught in debug builds only and reported through
// contract.h.
//
// Status and StatusOr are [[nodiscard]] types, and so is every function
// returning one: dropping an error is a compiler warning
// (-Werror=unused-result makes it an error). Where ignoring a result is
// really right, say so with an explicit `(void)` cast and a comment.
//
// StatusOr<T>::value(), operator* and operator-> require ok(). Calling them
// on an error is a programmer-contract violation: in EVERY build (debug and
// release) it prints the status to stderr and aborts, like Abseil's
// StatusOr::value(); it never returns a default T.
#ifndef PERCPU_PRIMITIVES_STATUS_H_
#define PERCPU_PRIMITIVES_STATUS_H_

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>

namespace percpu {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,     // the caller's input is malformed or out of its domain
  kOutOfRange,          // an index (CPU id, item) outside its valid range
  kResourceExhausted,   // memory or a configured limit ran out
  kFailedPrecondition,  // the object's state forbids the call (double free)
  kNotFound,            // a handle or file that does not exist
  kUnavailable,         // the environment lacks a facility (rseq, sysfs)
  kInternal,            // a system call failed unexpectedly
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  [[nodiscard]] static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK" or "<CODE>: <message>".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

[[nodiscard]] inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
[[nodiscard]] inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
[[nodiscard]] inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
[[nodiscard]] inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
[[nodiscard]] inline Status NotFoundError(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
[[nodiscard]] inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
[[nodiscard]] inline Status InternalError(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}

namespace internal {
// Prints "percpu: StatusOr::value() on an error: <status>" and aborts.
// Cold path of the accessors below.
[[noreturn, gnu::cold]] void DieOnBadStatusOrAccess(const Status& status);
}  // namespace internal

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit
    // An OK status without a value is a programmer error in the library.
    assert(!status_.ok());
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "StatusOr: OK without value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }
  // Precondition: ok(). On an error they abort with the status message in
  // every build (a programmer-contract violation, see the file comment).
  T& value() & {
    CheckOk();
    return value_;
  }
  const T& value() const& {
    CheckOk();
    return value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckOk() const {
    if (__builtin_expect(!status_.ok(), 0)) {
      internal::DieOnBadStatusOrAccess(status_);
    }
  }

  Status status_;
  T value_{};
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_STATUS_H_
