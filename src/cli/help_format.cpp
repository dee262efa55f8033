// help_format.cpp — wraps --help at kHelpWidth columns.
#include "cli/help_format.h"

#include <algorithm>
#include <sstream>

namespace kv::cli {

std::string wrap_words(const std::string& text, std::size_t width) {
  std::string out, line;
  auto flush = [&] {
    out += line;
    out += '\n';
    line.clear();
  };
  std::istringstream paragraphs(text);
  std::string paragraph;
  while (std::getline(paragraphs, paragraph)) {
    std::istringstream words(paragraph);
    std::string word;
    bool any = false;
    while (words >> word) {
      any = true;
      // A word longer than a line (a list such as ENUM:{a,b,c}) breaks after its commas.
      while (word.size() > width && word.find(',') != std::string::npos) {
        const size_t room = line.empty() ? width : width - std::min(width, line.size() + 1);
        size_t cut = room > 0 ? word.rfind(',', room - 1) : std::string::npos;
        if (cut == std::string::npos) {
          if (!line.empty()) {
            flush();
            continue;
          }
          cut = word.find(',');
        }
        line += (line.empty() ? "" : " ") + word.substr(0, cut + 1);
        flush();
        word.erase(0, cut + 1);
      }
      if (!line.empty() && line.size() + 1 + word.size() > width) flush();
      line += (line.empty() ? "" : " ") + word;
    }
    if (any || paragraph.empty()) flush();
  }
  if (!out.empty()) out.pop_back();  // no newline after the last line
  return out;
}

namespace {

// Each line of `text` after the first indented by `indent` spaces.
std::string indent_rest(const std::string& text, std::size_t indent) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '\n') out += std::string(indent, ' ');
  }
  return out;
}

// "  NAME                        description", both columns wrapped; a name past the column gets
// lines of its own.
std::string two_columns(const std::string& name, const std::string& desc, std::size_t column) {
  const std::string names = indent_rest(wrap_words(name, kHelpWidth - 4), 4);
  std::string out = "  " + names;
  if (desc.empty()) return out + '\n';
  const std::string wrapped = indent_rest(wrap_words(desc, kHelpWidth - column), column);
  if (out.find('\n') != std::string::npos || out.size() >= column)
    out += '\n' + std::string(column, ' ');
  else
    out += std::string(column - out.size(), ' ');
  return out + wrapped + '\n';
}

}  // namespace

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  return two_columns(make_option_name(opt, is_positional) + make_option_opts(opt),
                     make_option_desc(opt), get_column_width());
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  return two_columns(sub->get_display_name(true), sub->get_description(), get_column_width());
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string desc = CLI::Formatter::make_description(app);
  return desc.empty() ? desc : wrap_words(desc, kHelpWidth) + '\n';
}

void use_help_format(CLI::App& app) {
  auto formatter = std::make_shared<HelpFormatter>();
  formatter->column_width(30);
  app.formatter(formatter);
}

}  // namespace kv::cli
