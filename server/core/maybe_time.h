// A steady-clock time or none, in the 8 bytes of the time alone: std::optional<SteadyTime> takes
// 16, and a coordinator holds several of them once per pipeline. None is SteadyTime::min(), which
// no clock reading (nor a time computed from one) reaches. The part of std::optional's interface
// the coordinator uses, with the same meaning.
#pragma once

#include <optional>

#include "core/types.h"

namespace ckpt {

class MaybeTime {
 public:
  constexpr MaybeTime() = default;
  // Implicit, as std::optional's are.
  constexpr MaybeTime(std::nullopt_t) {}
  constexpr MaybeTime(SteadyTime at) : at_(at) {}
  constexpr MaybeTime(const std::optional<SteadyTime>& at) : at_(at ? *at : kNone) {}

  constexpr bool has_value() const { return at_ != kNone; }
  constexpr explicit operator bool() const { return has_value(); }
  // Only when has_value().
  constexpr const SteadyTime& operator*() const { return at_; }
  constexpr SteadyTime value_or(SteadyTime otherwise) const {
    return has_value() ? at_ : otherwise;
  }
  constexpr void reset() { at_ = kNone; }
  // Passes where an optional is taken.
  constexpr operator std::optional<SteadyTime>() const {
    return has_value() ? std::optional<SteadyTime>(at_) : std::nullopt;
  }

  friend constexpr bool operator==(MaybeTime a, MaybeTime b) { return a.at_ == b.at_; }

 private:
  static constexpr SteadyTime kNone = SteadyTime::min();
  SteadyTime at_ = kNone;
};

}  // namespace ckpt
