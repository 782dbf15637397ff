#pragma once
// Ids become directory names in default savepoint locations (<root>/<job>/<pipeline>/<id>). Job and
// pipeline ids are free text (engines use names like "orders/eu" or "etl.v2"), so each one is
// encoded into a single safe path segment instead of being restricted: a "/" or ".." in an id must
// never move a savepoint outside its own directory, and two different ids must never share one.

#include <string>
#include <string_view>

namespace ckpt {

// Percent-encodes every byte outside [A-Za-z0-9._-] ("%" included, so the encoding is
// injective), and the whole of "." and ".." (which would otherwise name the current or the
// parent directory). Other ids come out unchanged.
std::string EncodePathSegment(std::string_view id);

}  // namespace ckpt
