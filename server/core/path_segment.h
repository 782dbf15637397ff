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

// True when `path` (a file path or a URI) lies under `root`: equal to it, or below it at a "/"
// boundary, with no "." or ".." segment after the root (which could climb out of it) and no
// backslash (a separator on some file systems). "s3://b/sp/x" is under "s3://b/sp" and
// "s3://b/sp/"; "s3://b/spx" and "s3://b/sp/../other" are not.
bool PathIsUnder(std::string_view path, std::string_view root);

}  // namespace ckpt
