#include "ctl/live_block.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace ckpt::ctl {
namespace {

size_t TerminalColumns(std::FILE* out) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// At most `columns` - 1 characters (UTF-8 aware), so no line wraps.
std::string Fit(const std::string& line, size_t columns) {
  size_t chars = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;
    if (++chars >= columns) return line.substr(0, i);
  }
  return line;
}

}  // namespace

void LiveBlock::MoveToTop() {
  if (drawn_ > 0) std::fprintf(out_, "\x1b[%zuA", drawn_);
  std::fputs("\r\x1b[J", out_);  // column 1, erase to the end of the screen
}

void LiveBlock::Draw(const std::vector<std::string>& lines) {
  const size_t columns = TerminalColumns(out_);
  MoveToTop();
  for (const std::string& line : lines) {
    std::fputs(Fit(line, columns).c_str(), out_);
    std::fputc('\n', out_);
  }
  drawn_ = lines.size();
  std::fflush(out_);
}

void LiveBlock::Clear() {
  if (drawn_ == 0) return;
  MoveToTop();
  drawn_ = 0;
  std::fflush(out_);
}

}  // namespace ckpt::ctl
