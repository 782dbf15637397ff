#pragma once
// SampleRecorder keeps exact latency samples (microseconds) for one measurement window.
//
// Threading: Record may be called from any thread, concurrently, including from a strand: it is
// lock-free (one relaxed fetch_add and a store into a slot no other caller gets) and never
// allocates. Arm/Disarm/Take are called by the controlling thread; Take only after Disarm and once
// the recording threads are known to be past their Record calls (the benchmark stops its io threads
// or waits a moment; a late sample is dropped by the capacity check, never torn).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace ckpt::bench {

class SampleRecorder {
 public:
  // The buffer is allocated but not touched, so its pages are not resident (and not in a measured
  // RSS) until samples land in them.
  explicit SampleRecorder(size_t capacity) : capacity_(capacity), slots_(new int64_t[capacity]) {}
  SampleRecorder(const SampleRecorder&) = delete;
  SampleRecorder& operator=(const SampleRecorder&) = delete;

  void Arm() { armed_.store(true, std::memory_order_release); }
  void Disarm() { armed_.store(false, std::memory_order_release); }

  void Record(int64_t micros) {
    if (!armed_.load(std::memory_order_acquire)) return;
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i < capacity_) {
      slots_[i] = micros;
    } else {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // The samples recorded while armed, sorted ascending.
  std::vector<int64_t> TakeSorted() const {
    const size_t n = std::min(next_.load(std::memory_order_acquire), capacity_);
    std::vector<int64_t> out(slots_.get(), slots_.get() + n);
    std::sort(out.begin(), out.end());
    return out;
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  const size_t capacity_;
  std::unique_ptr<int64_t[]> slots_;
  std::atomic<size_t> next_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> armed_{false};
};

// Nearest-rank percentile of an ascending vector (q in [0, 1]); 0 when empty.
inline int64_t Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace ckpt::bench
