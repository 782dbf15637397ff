#include "ctl/output_table.h"

#include <algorithm>

namespace ckpt::ctl {
namespace {

constexpr size_t kGap = 2;

// Characters, not bytes: UTF-8 continuation bytes (10xxxxxx) take no column.
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80 ? 1 : 0;
  return width;
}

void AppendLine(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                std::string* out) {
  std::string line;
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string& cell = i < cells.size() ? cells[i] : std::string();
    line += cell;
    if (i + 1 < widths.size()) line.append(widths[i] - DisplayWidth(cell) + kGap, ' ');
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  *out += line;
  *out += '\n';
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

std::string Table::Render() const {
  size_t columns = headers_.size();
  for (const auto& row : rows_) columns = std::max(columns, row.size());
  std::vector<size_t> widths(columns, 0);
  auto measure = [&widths](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i)
      widths[i] = std::max(widths[i], DisplayWidth(cells[i]));
  };
  measure(headers_);
  for (const auto& row : rows_) measure(row);

  std::string out;
  if (!headers_.empty()) AppendLine(headers_, widths, &out);
  for (const auto& row : rows_) AppendLine(row, widths, &out);
  return out;
}

}  // namespace ckpt::ctl
