// labels.cpp — the label rule.
#include "scenario/labels.h"

#include <fmt/format.h>

namespace kv {

std::optional<std::string> label_problem(std::string_view label) {
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok = !label.empty() && label.size() <= kMaxLabelBytes && lower_or_digit(label.front());
  for (char c : label) ok = ok && (lower_or_digit(c) || c == '-' || c == '_');
  if (ok) return std::nullopt;
  return fmt::format("expected a label: lower-case letters, digits, '-' and '_', starting with a "
                     "letter or a digit, at most {} bytes",
                     kMaxLabelBytes);
}

}  // namespace kv
