#include "common/name_list.h"

#include <algorithm>

namespace ckpt {

std::string FirstNames(const std::vector<std::string>& names, size_t total, size_t limit) {
  total = std::max(total, names.size());
  std::string out;
  const size_t shown = std::min(limit, names.size());
  for (size_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  if (total > shown) out += ", ... (" + std::to_string(total) + " in all)";
  return out;
}

}  // namespace ckpt
