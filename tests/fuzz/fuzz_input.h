#pragma once
// What the coordinator fuzz targets share: the input read byte by byte, and a clock moved by hand.

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "support/coordinator_invariants.h"

namespace ckpt::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  // Past the end: zeros, so a truncated event still decodes.
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Steady and wall time move together, by hand. Optionally every steady reading moves time on by
// 1 us, as a real clock does between two reads; Peek() (the model's reading) never does.
class FuzzClock final : public testing::TestClock {
 public:
  SteadyTime SteadyNow() const override {
    if (ticking_) now_ += std::chrono::microseconds(1);
    return now_;
  }
  int64_t WallMs() const override {
    return kWallBase + std::chrono::duration_cast<Millis>(now_ - kStart).count();
  }
  SteadyTime Peek() const override { return now_; }
  bool Ticking() const override { return ticking_; }
  void SetTicking(bool on) { ticking_ = on; }
  void Advance(std::chrono::microseconds d) { now_ += d; }
  void AdvanceTo(SteadyTime t) {
    if (t > now_) now_ = t;
  }

 private:
  static constexpr SteadyTime kStart{Millis(1'000'000)};
  static constexpr int64_t kWallBase = 1'700'000'000'000;
  mutable SteadyTime now_{kStart};
  bool ticking_ = false;
};

}  // namespace ckpt::fuzz
