#pragma once
// How ckptd's log lines look, chosen once at start (log.format; main.cc):
//  - json: one JSON object per line on stderr (json_formatter.h);
//  - text under journald (stderr is the stream named by JOURNAL_STREAM): no timestamp, since the
//    journal stamps every line itself, and a "<N>" syslog priority prefix, which journald turns
//    into the entry's priority (so `journalctl -p warning` works);
//  - text elsewhere: timestamp, level and message on stderr, the level coloured on a terminal.
// Threading: call SetUpLogging before any other thread logs (it replaces the default logger).

#include <spdlog/formatter.h>
#include <sys/types.h>

#include <memory>
#include <string>

namespace ckpt {

enum class LogStyle { kJson, kJournal, kTerminal, kPlain };

// Whether JOURNAL_STREAM's value ("<device>:<inode>", as systemd sets it) names the file whose
// device and inode are given; systemd's advice for telling that stderr goes to the journal (the
// variable alone may be inherited by a child whose stderr went elsewhere).
bool JournalStreamMatches(const char* journal_stream, dev_t device, ino_t inode);

// The style for `format` ("text" or "json") given where stderr goes now.
LogStyle ChooseLogStyle(const std::string& format);

// The formatter of `style`. Text styles escape control characters and invalid UTF-8 in the
// message (\xNN) and cut it to kMaxLogMessageBytes: whatever a client sent, a line stays one line.
std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogStyle style);

// Installs the default logger for `style` at `level` (spdlog's level names).
void SetUpLogging(LogStyle style, const std::string& level);

// "json", "text for journald", "text", for a log line saying what was chosen.
const char* LogStyleName(LogStyle style);

}  // namespace ckpt
