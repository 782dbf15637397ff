#pragma once
// A block of lines redrawn in place on a terminal (ANSI cursor movement), for live progress.

#include <cstdio>
#include <string>
#include <vector>

namespace ckpt::ctl {

// Threading: requires external synchronization. `out` must be a terminal and outlive the block.
class LiveBlock {
 public:
  explicit LiveBlock(std::FILE* out) : out_(out) {}
  LiveBlock(const LiveBlock&) = delete;
  LiveBlock& operator=(const LiveBlock&) = delete;

  // Replaces what was drawn with `lines` (each cut to the terminal's width, so that the cursor
  // arithmetic holds).
  void Draw(const std::vector<std::string>& lines);
  // Erases the block; the cursor ends where the block began.
  void Clear();

 private:
  void MoveToTop();

  std::FILE* const out_;
  size_t drawn_ = 0;  // lines on screen now
};

}  // namespace ckpt::ctl
