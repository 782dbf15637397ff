#pragma once
// The data_dir on disk: created 0750, its files 0640 and never opened through a symbolic link, and
// the STORE_ID file that tells a data_dir which held a store from a new one.
//
// A fresh store writes <data_dir>/STORE_ID (a random id) once its database exists. From then on a
// database that is missing, empty or not the one STORE_ID names is refused (DATA_LOSS) instead of
// being taken for a new store, which would start the checkpoint ids over; ids are never reused
// (docs/PROTOCOL.md, "The model").
//
// Threading: plain functions; the controlling thread calls them while opening the store.

#include <optional>
#include <string>

#include "common/status.h"

namespace ckpt {

// Creates `dir` (and missing parents) with mode 0750; FAILED_PRECONDITION if it exists and is not a
// directory (a symbolic link to a directory is followed: a data_dir may live elsewhere).
Status EnsureDataDir(const std::string& dir);

// FAILED_PRECONDITION naming `path` if it is a symbolic link: the store's files are opened only
// as themselves, so that a link planted in data_dir cannot make ckptd truncate or take over
// another file. OK if it does not exist.
Status RefuseSymlink(const std::string& path);

// Creates `path` as an empty regular file with mode 0640 unless it exists (never through a
// symbolic link).
Status CreateFileIfMissing(const std::string& path);

// A new random store id: 32 hex digits.
std::string NewStoreId();

// The id in <dir>/STORE_ID, nullopt when there is no such file; DATA_LOSS when it is unreadable or
// not a store id.
Result<std::optional<std::string>> ReadStoreId(const std::string& dir);
// Writes <dir>/STORE_ID atomically (a temporary file, fsync, rename, fsync of the directory).
Status WriteStoreId(const std::string& dir, const std::string& id);

}  // namespace ckpt
