#include "config/yaml_walk.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

namespace ckpt {
namespace {

// Case-insensitive, so "Listen" or "INFO" still get a suggestion.
bool SameLetter(char a, char b) {
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

// Levenshtein distance; keys are short, so the quadratic table is fine.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitute = diagonal + (SameLetter(a[i - 1], b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "in pipelines[0]" / "at the top level", for messages about keys of a map.
std::string Where(const std::string& path) {
  return path.empty() ? "at the top level" : "in " + path;
}

// A quoted scalar has the non-specific tag "!": YAML says it is a string, whatever it looks like.
bool IsQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

// Plain scalars (tag "?") and explicit !!int may be numbers; quoted or otherwise tagged ones not.
bool MayBeInteger(const YAML::Node& node) {
  return node.IsScalar() && (node.Tag() == "?" || node.Tag() == "tag:yaml.org,2002:int");
}

// A bound for a message: "0", "1", "0.5".
std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Records where each document starts and where its content (anything but a lone null) begins.
class DocumentScanner : public YAML::EventHandler {
 public:
  YAML::Mark start;
  YAML::Mark content;
  bool has_content = false;

  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;
    has_content = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}  // an empty document is one null
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Content(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Content(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Content(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Content(mark);
  }
  void OnMapEnd() override {}

 private:
  void Content(const YAML::Mark& mark) {
    if (!has_content) content = mark;
    has_content = true;
  }
};

// "unexpected ','" for the character the parser got stuck on.
std::string Unexpected(const std::string& text, int pos) {
  if (pos < 0 || static_cast<size_t>(pos) >= text.size()) return "unexpected end of input";
  const unsigned char c = text[pos];
  if (std::isprint(c)) return std::string("unexpected '") + static_cast<char>(c) + "'";
  return "unexpected character (byte " + std::to_string(c) + ")";
}

YamlError OutOfRange(const YamlField& field, int64_t min, int64_t max) {
  return field.ValueError(field.path + " is " + field.value.Scalar() + ", must be between " +
                          std::to_string(min) + " and " + std::to_string(max));
}

}  // namespace

MaybeYamlError LoadSingleDocument(const std::string& text, YAML::Node* root) {
  // A first pass over the parser's events only, ending at the first sign of trouble; the tree is
  // then built from the first document alone.
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentScanner scan;
  std::optional<YAML::Mark> previous_start;
  for (size_t index = 0; parser.HandleNextDocument(scan); ++index) {
    // A document starting where the previous one did means the parser consumed nothing: it would
    // go on producing empty documents forever.
    if (previous_start && previous_start->pos == scan.start.pos) {
      return YamlError{scan.start, Unexpected(text, scan.start.pos)};
    }
    if (index > 0 && scan.has_content) {
      return YamlError{scan.content, "a config file holds one YAML document, found more"};
    }
    previous_start = scan.start;
  }
  *root = YAML::Load(text);
  return std::nullopt;
}

std::string FormatYamlError(const std::string& source, const YamlError& error) {
  if (error.mark.is_null()) return source + ": " + error.reason;
  return source + ":" + std::to_string(error.mark.line + 1) + ":" +
         std::to_string(error.mark.column + 1) + ": " + error.reason;
}

YAML::Mark YamlField::ValueMark() const { return value.IsNull() ? key.Mark() : value.Mark(); }

std::string DescribeNode(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Scalar: {
      // Long scalars are cut: the position already says where the rest is.
      std::string text = node.Scalar();
      if (text.size() > 40) text = text.substr(0, 37) + "...";
      if (IsQuoted(node)) return "the quoted string \"" + text + "\"";
      if (node.Tag() != "?") return "'" + text + "' tagged " + node.Tag();
      return "'" + text + "'";
    }
    default: return "nothing";
  }
}

std::string ClosestMatch(std::string_view word, std::span<const std::string_view> known) {
  std::string_view best;
  size_t best_distance = std::string_view::npos;
  for (std::string_view candidate : known) {
    const size_t d = EditDistance(word, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  // Two edits, or a third of the word for longer keys ("timeout" for "timeout_ms"): beyond that a
  // suggestion is more confusing than helpful.
  const size_t allowed = std::max<size_t>(2, best.size() / 3);
  return best_distance <= allowed ? std::string(best) : std::string();
}

MaybeYamlError ForEachField(const YAML::Node& map, const std::string& path,
                            std::span<const std::string_view> known,
                            const std::function<MaybeYamlError(const YamlField&)>& visit) {
  if (map.IsNull()) return std::nullopt;
  if (!map.IsMap()) {
    const std::string what = path.empty() ? "the top level" : path;
    return YamlError{map.Mark(), what + " must be a map of keys, got " + DescribeNode(map)};
  }
  // yaml-cpp keeps both entries of a repeated key and lookups see only the first: remember the
  // first position of each key so the second one can be reported.
  std::map<std::string, YAML::Mark> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies, not references: it-> returns a proxy that dies at the end of the statement.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      return YamlError{key.Mark(),
                       "keys must be strings, got " + DescribeNode(key) + " " + Where(path)};
    }
    const std::string& name = key.Scalar();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string reason = "unknown key '" + name + "' " + Where(path);
      if (std::string guess = ClosestMatch(name, known); !guess.empty()) {
        reason += "; did you mean '" + guess + "'?";
      }
      return YamlError{key.Mark(), reason};
    }
    if (auto [first, inserted] = seen.emplace(name, key.Mark()); !inserted) {
      return YamlError{key.Mark(), "duplicate key '" + name + "' " + Where(path) +
                                       " (first at line " + std::to_string(first->second.line + 1) +
                                       ")"};
    }
    std::string field_path = path;  // "a.b.name"
    if (!field_path.empty()) field_path += '.';
    field_path += name;
    YamlField field{name, std::move(field_path), key, value};
    if (auto error = visit(field)) return error;
  }
  return std::nullopt;
}

MaybeYamlError ReadInt(const YamlField& field, int64_t min, int64_t max, int64_t* out) {
  const bool millis = field.name.ends_with("_ms");
  const std::string expected = millis ? "an integer number of milliseconds" : "an integer";
  if (!MayBeInteger(field.value)) {
    return field.ValueError(field.path + ": expected " + expected + ", got " +
                            DescribeNode(field.value));
  }
  // Decimal digits with an optional sign, nothing else: from_chars rejects "1e3", "0x10" and
  // " 5" here, where stream-based conversion would have accepted or truncated some of them.
  std::string_view text = field.value.Scalar();
  if (text.starts_with('+')) text.remove_prefix(1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) return OutOfRange(field, min, max);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return field.ValueError(field.path + ": expected " + expected + ", got " +
                            DescribeNode(field.value));
  }
  if (value < min || value > max) return OutOfRange(field, min, max);
  *out = value;
  return std::nullopt;
}

MaybeYamlError ReadFraction(const YamlField& field, double min, double max, double* out) {
  const std::string expected =
      "a number between " + FormatNumber(min) + " and " + FormatNumber(max) + ", got ";
  if (!MayBeInteger(field.value) && field.value.Tag() != "tag:yaml.org,2002:float") {
    return field.ValueError(field.path + ": expected " + expected + DescribeNode(field.value));
  }
  const std::string_view text = field.value.Scalar();
  // Digits, at most one '.', nothing else: no sign, exponent, "nan" or "inf" to slip through.
  const bool plain = !text.empty() && text.find_first_not_of("0123456789.") == text.npos &&
                     std::count(text.begin(), text.end(), '.') <= 1 && text != ".";
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!plain || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return field.ValueError(field.path + ": expected " + expected + DescribeNode(field.value));
  }
  *out = value;
  return std::nullopt;
}

MaybeYamlError ReadString(const YamlField& field, std::string* out) {
  if (!field.value.IsScalar()) {
    return field.ValueError(field.path + ": expected a string, got " + DescribeNode(field.value));
  }
  *out = field.value.Scalar();
  return std::nullopt;
}

MaybeYamlError ReadBool(const YamlField& field, bool* out) {
  if (field.value.IsScalar() && !IsQuoted(field.value)) {
    std::string text = field.value.Scalar();
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (text == "true" || text == "false") {
      *out = text == "true";
      return std::nullopt;
    }
  }
  return field.ValueError(field.path + ": expected true or false, got " +
                          DescribeNode(field.value));
}

MaybeYamlError ReadStringList(const YamlField& field, std::vector<std::string>* out) {
  if (!field.value.IsSequence()) {
    return field.ValueError(field.path + ": expected a list of strings, got " +
                            DescribeNode(field.value));
  }
  std::vector<std::string> items;
  size_t i = 0;
  for (auto it = field.value.begin(); it != field.value.end(); ++it, ++i) {
    const YAML::Node item = *it;
    if (!item.IsScalar()) {
      // A null item ("- " alone) has the next token's mark, like an empty map value; the list's
      // own mark is the closest honest position then.
      const YAML::Mark mark = item.IsNull() ? field.value.Mark() : item.Mark();
      return YamlError{mark, field.path + "[" + std::to_string(i) + "]: expected a string, got " +
                                 DescribeNode(item)};
    }
    items.push_back(item.Scalar());
  }
  *out = std::move(items);
  return std::nullopt;
}

}  // namespace ckpt
