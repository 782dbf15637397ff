#pragma once
// Ids are user input (any byte but a few, up to kMaxIdBytes), and the web view prints them: into
// HTML text and attributes, and into links. These turn them into text that is only ever text, and
// links back into the ids they name.
// Threading: pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

// For HTML text and double- or single-quoted attribute values: & < > " ' become entities.
std::string HtmlEscape(std::string_view text);

// For one path segment or one query value: every byte but A-Z a-z 0-9 - . _ ~ as %XX, so that
// "/", "?", "#", "&" and "%" in an id stay inside its segment.
std::string PercentEncode(std::string_view text);

// The inverse: %XX (either case) becomes its byte, and `plus_is_space` turns "+" into " " (query
// values from forms). Nullopt for a "%" not followed by two hex digits.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space = false);

// "a=1&b=x%2Fy" -> {{"a","1"},{"b","x/y"}}, in order; a name without "=" has the value "".
// Nullopt when a name or value is not valid percent-encoding.
using QueryParams = std::vector<std::pair<std::string, std::string>>;
std::optional<QueryParams> ParseQuery(std::string_view query);

// The last value of `name` (a link may repeat one to override it), or nullopt.
std::optional<std::string> QueryValue(const QueryParams& params, std::string_view name);

}  // namespace ckpt
