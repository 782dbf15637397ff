#pragma once
// Locking rules the compiler checks: clang's thread-safety analysis (-Wthread-safety, on in the
// clang builds) reads these attributes and rejects an access to a guarded member without its
// mutex, or a call to a function that needs a lock the caller does not hold. gcc ignores them.
// Use them with common/mutex.h's Mutex; std::mutex carries no annotations of its own.
//
//   Mutex mu_;
//   int count_ CKPT_GUARDED_BY(mu_);
//   void Bump() CKPT_REQUIRES(mu_);   // the caller holds mu_
//   void Run() CKPT_EXCLUDES(mu_);    // the caller must not (it takes mu_ itself)

#if defined(__clang__)
#define CKPT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CKPT_THREAD_ANNOTATION(x)
#endif

#define CKPT_CAPABILITY(name) CKPT_THREAD_ANNOTATION(capability(name))
#define CKPT_SCOPED_CAPABILITY CKPT_THREAD_ANNOTATION(scoped_lockable)
#define CKPT_GUARDED_BY(mu) CKPT_THREAD_ANNOTATION(guarded_by(mu))
#define CKPT_PT_GUARDED_BY(mu) CKPT_THREAD_ANNOTATION(pt_guarded_by(mu))
#define CKPT_REQUIRES(...) CKPT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define CKPT_REQUIRES_SHARED(...) CKPT_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define CKPT_ACQUIRE(...) CKPT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define CKPT_ACQUIRE_SHARED(...) CKPT_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define CKPT_RELEASE(...) CKPT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define CKPT_RELEASE_SHARED(...) CKPT_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define CKPT_RELEASE_GENERIC(...) CKPT_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define CKPT_EXCLUDES(...) CKPT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define CKPT_RETURN_CAPABILITY(x) CKPT_THREAD_ANNOTATION(lock_returned(x))
#define CKPT_ASSERT_CAPABILITY(x) CKPT_THREAD_ANNOTATION(assert_capability(x))
// For the few functions the analysis cannot follow; say why next to each use.
#define CKPT_NO_THREAD_SAFETY_ANALYSIS CKPT_THREAD_ANNOTATION(no_thread_safety_analysis)
