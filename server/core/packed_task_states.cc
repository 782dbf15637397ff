#include "core/packed_task_states.h"

#include <cstring>

namespace ckpt {
namespace {

constexpr size_t kWordBytes = sizeof(uint64_t);

size_t VarintBytes(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

char* PutVarint(char* out, uint64_t value) {
  while (value >= 0x80) {
    *out++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<char>(value);
  return out;
}

// Decodes what PutVarint wrote (the block is ours, never read from outside).
const char* GetVarint(const char* in, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(*in++);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) break;
  }
  *value = result;
  return in;
}

size_t StringBytes(std::string_view s) { return VarintBytes(s.size()) + s.size(); }

char* PutString(char* out, std::string_view s) {
  out = PutVarint(out, s.size());
  if (!s.empty()) std::memcpy(out, s.data(), s.size());
  return out + s.size();
}

const char* GetString(const char* in, std::string_view* s) {
  uint64_t length = 0;
  in = GetVarint(in, &length);
  *s = std::string_view(in, static_cast<size_t>(length));
  return in + length;
}

uint64_t Word(const char* at) {
  uint64_t word = 0;
  std::memcpy(&word, at, kWordBytes);
  return word;
}

void PutWord(char* at, uint64_t word) { std::memcpy(at, &word, kWordBytes); }

}  // namespace

PackedTaskStates::PackedTaskStates(const std::map<std::string, TaskState>& states) {
  if (states.empty()) return;
  size_t total = kWordBytes * (1 + states.size());
  for (const auto& [task, state] : states) {
    total += StringBytes(task) + StringBytes(state.uri) + StringBytes(state.checksum) +
             VarintBytes(static_cast<uint64_t>(state.size_bytes));
  }
  block_ = std::make_unique_for_overwrite<char[]>(total);
  char* const base = block_.get();
  PutWord(base, states.size());
  char* out = base + kWordBytes * (1 + states.size());
  size_t i = 0;
  for (const auto& [task, state] : states) {
    PutWord(base + kWordBytes * (1 + i++), static_cast<uint64_t>(out - base));
    out = PutString(out, task);
    out = PutString(out, state.uri);
    out = PutString(out, state.checksum);
    out = PutVarint(out, static_cast<uint64_t>(state.size_bytes));
  }
}

size_t PackedTaskStates::size() const {
  return block_ ? static_cast<size_t>(Word(block_.get())) : 0;
}

PackedTaskStates::Entry PackedTaskStates::at(size_t i) const {
  const char* const base = block_.get();
  const char* in = base + Word(base + kWordBytes * (1 + i));
  Entry entry;
  in = GetString(in, &entry.task);
  in = GetString(in, &entry.uri);
  in = GetString(in, &entry.checksum);
  uint64_t size_bits = 0;
  GetVarint(in, &size_bits);
  entry.size_bytes = static_cast<int64_t>(size_bits);
  return entry;
}

std::optional<PackedTaskStates::Entry> PackedTaskStates::Find(std::string_view task) const {
  size_t low = 0;
  size_t high = size();
  while (low < high) {  // the first entry whose task id is not below `task`
    const size_t mid = low + (high - low) / 2;
    std::string_view name;
    GetString(block_.get() + Word(block_.get() + kWordBytes * (1 + mid)), &name);
    if (name < task) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  if (low == size()) return std::nullopt;
  Entry entry = at(low);
  if (entry.task != task) return std::nullopt;
  return entry;
}

std::map<std::string, TaskState> PackedTaskStates::ToMap() const {
  std::map<std::string, TaskState> states;
  for (size_t i = 0; i < size(); ++i) {
    const Entry entry = at(i);
    // In order: each goes in at the end.
    states.emplace_hint(states.end(), std::string(entry.task), entry.ToTaskState());
  }
  return states;
}

}  // namespace ckpt
