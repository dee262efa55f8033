// help_format.h — `--help` that fits a 100-column terminal: CLI11's formatter, but with each
// option's names and description wrapped at word boundaries (CLI11 2.1 prints them on one line
// whatever their length).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace kv::cli {

inline constexpr std::size_t kHelpWidth = 100;

// `text` broken at spaces into lines of at most `width` characters (a word longer than that
// stands alone on its line); an explicit newline is kept.
std::string wrap_words(const std::string& text, std::size_t width);

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
};

// Installs the formatter on `app` (subcommands added after it inherit it).
void use_help_format(CLI::App& app);

}  // namespace kv::cli
