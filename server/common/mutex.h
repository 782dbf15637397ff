#pragma once
// Mutex, SharedMutex and their scoped locks: std::mutex and std::shared_mutex with the attributes
// clang's thread-safety analysis needs (common/thread_annotations.h), so that every "guarded by"
// in the daemon is checked by the compiler rather than written in a comment. CondVar waits on a
// MutexLock; the analysis sees the lock held throughout, which is what the caller observes.
//
// A predicate passed to CondVar::Wait reads guarded members from inside a lambda, which the
// analysis checks as a function of its own: annotate it, e.g. [this]() CKPT_REQUIRES(mu_) {...}.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "common/thread_annotations.h"

namespace ckpt {

class CKPT_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() CKPT_ACQUIRE() { mu_.lock(); }
  void Unlock() CKPT_RELEASE() { mu_.unlock(); }
  // For code that must hand the raw mutex to a library (a PacingClock, a condition variable).
  std::mutex& native() CKPT_RETURN_CAPABILITY(this) { return mu_; }
  // Tells the analysis that the caller holds this mutex, where it cannot see the lock (a helper
  // object or a lambda used only under it). Checks nothing at run time: say why at each use.
  void AssertHeld() const CKPT_ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
};

// Holds a Mutex for its whole scope (no unlocking half-way: a CondVar wait relies on it being
// held, which the analysis does not check by itself).
class CKPT_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) CKPT_ACQUIRE(mu) : lock_(mu.native()) {}
  ~MutexLock() CKPT_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

class CondVar {
 public:
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }
  template <typename Predicate>
  void Wait(MutexLock& lock, Predicate done) {
    cv_.wait(lock.native(), done);
  }
  // False when `timeout` passed with `done` still false.
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> timeout, Predicate done) {
    return cv_.wait_for(lock.native(), timeout, done);
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(MutexLock& lock, std::chrono::time_point<Clock, Duration> deadline,
                 Predicate done) {
    return cv_.wait_until(lock.native(), deadline, done);
  }
  std::condition_variable& native() { return cv_; }

 private:
  std::condition_variable cv_;
};

class CKPT_CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() CKPT_ACQUIRE() { mu_.lock(); }
  void Unlock() CKPT_RELEASE() { mu_.unlock(); }
  void LockShared() CKPT_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() CKPT_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class CKPT_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) CKPT_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterLock() CKPT_RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class CKPT_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) CKPT_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() CKPT_RELEASE() { mu_.UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace ckpt
