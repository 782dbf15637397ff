#pragma once
// Strict walking of a yaml-cpp tree, for the config loader. yaml-cpp is lenient where a config
// file must not be: duplicate keys pass silently, a missing key has no position, and Node::as<T>
// throws with messages that do not name the key. These helpers check every key and value and tie
// each problem to a position in the file. Nothing here throws on bad input; yaml-cpp's own
// exceptions are caught by the caller (daemon_config.cc), which owns the module boundary.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace ckpt {

// A problem at a place in the file. `mark` is yaml-cpp's (0-based; null when unknown).
struct YamlError {
  YAML::Mark mark;
  std::string reason;
};
using MaybeYamlError = std::optional<YamlError>;

// Parses `text`, which must hold at most one YAML document with content, into that document's
// root (a null node for an empty or comment-only file). yaml-cpp's YAML::LoadAll loops forever,
// allocating, on some malformed input (a stray ',' at document level: yaml-cpp issue #1040, fixed
// after 0.8), and YAML::Load silently ignores later documents; this guards against both.
// Syntax errors still arrive as YAML::Exception, as from yaml-cpp itself.
MaybeYamlError LoadSingleDocument(const std::string& text, YAML::Node* root);

// "<source>:<line>:<column>: <reason>" with 1-based line and column, or "<source>: <reason>"
// when the mark is null.
std::string FormatYamlError(const std::string& source, const YamlError& error);

// One entry of a map, named by its path for messages: "threads", "pipelines[0].interval_ms".
struct YamlField {
  std::string name;  // the key as written
  std::string path;
  YAML::Node key;
  YAML::Node value;

  // Where to point at the value. For "key:" with nothing after it yaml-cpp marks the next token,
  // possibly lines below, so an empty value points at its key instead.
  YAML::Mark ValueMark() const;
  YamlError ValueError(std::string reason) const { return {ValueMark(), std::move(reason)}; }
};

// "list" for a sequence, "map", "null", or "'<text>'" for a scalar: what a message says it got.
std::string DescribeNode(const YAML::Node& node);

// The entry of `known` closest to `word` by edit distance, or "" when none is close enough to be a
// plausible typo.
std::string ClosestMatch(std::string_view word, std::span<const std::string_view> known);

// Calls `visit` for every entry of `map`, whose path is `path` ("" at the top level). Fails at the
// first non-map node, non-string key, unknown key (suggesting a close known one), or key seen
// before in this map (at the second occurrence). A null node counts as an empty map, so a section
// whose keys are all commented out is valid. Stops at the first error `visit` returns.
MaybeYamlError ForEachField(const YAML::Node& map, const std::string& path,
                            std::span<const std::string_view> known,
                            const std::function<MaybeYamlError(const YamlField&)>& visit);

// A plain decimal integer within [min, max]. Quoted numbers, floats, "10s" and the like are
// rejected: `_ms` keys are integers in milliseconds, and the message says so.
MaybeYamlError ReadInt(const YamlField& field, int64_t min, int64_t max, int64_t* out);

// ReadInt bounded by what T can hold (or by [min, max] when given).
template <typename T>
MaybeYamlError ReadIntAs(const YamlField& field, T* out,
                         int64_t min = std::numeric_limits<T>::min(),
                         int64_t max = std::numeric_limits<T>::max()) {
  int64_t value = 0;
  if (auto error = ReadInt(field, min, max, &value)) return error;
  *out = static_cast<T>(value);
  return std::nullopt;
}

// A plain decimal fraction within [min, max] ("0.1", "0", "1"); exponents, "nan", "inf",
// hexadecimal and quoted numbers are refused.
MaybeYamlError ReadFraction(const YamlField& field, double min, double max, double* out);

// A scalar (not null, not a map or list), as text.
MaybeYamlError ReadString(const YamlField& field, std::string* out);

// `true` or `false` as written (YAML 1.2's core schema, any case). "yes", "on", 1 and quoted
// strings are refused: a config read the same way by every YAML tool is worth the strictness.
MaybeYamlError ReadBool(const YamlField& field, bool* out);

// A list of scalars. Elements are named "<path>[i]" in messages.
MaybeYamlError ReadStringList(const YamlField& field, std::vector<std::string>* out);

}  // namespace ckpt
