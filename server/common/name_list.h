#pragma once
// How a message names many things (tasks, workers) without growing with them: the first few,
// then how many there are in all.

#include <cstddef>
#include <string>
#include <vector>

namespace ckpt {

// The default number of names a log line or an error lists.
inline constexpr size_t kNamesListed = 10;

// "a, b, c" or "a, b, ... (250 in all)": the first `limit` of `names`, then the count if more
// exist. `total` is how many there are in all (at least names.size(); a caller may pass only the
// first few names and the count of the rest).
std::string FirstNames(const std::vector<std::string>& names, size_t total,
                       size_t limit = kNamesListed);
inline std::string FirstNames(const std::vector<std::string>& names) {
  return FirstNames(names, names.size());
}

}  // namespace ckpt
