#pragma once
// Aligned text tables for `-o table`.

#include <string>
#include <vector>

namespace ckpt::ctl {

// Columns are left-aligned, padded to their widest cell (in UTF-8 characters) and two spaces
// apart; lines carry no trailing spaces. A row with fewer cells than headers is padded with empty
// cells. Threading: a plain value; requires external synchronization.
class Table {
 public:
  // Empty headers: no header row (a key/value listing, for instance).
  explicit Table(std::vector<std::string> headers = {});

  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // Every line ends with '\n'; a table without headers or rows renders as "".
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ckpt::ctl
