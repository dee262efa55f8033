// parse.cpp — the entry points of scenario reading: text or file in, Scenario or first error out.
#include "scenario/parse.h"

#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "io/input_file.h"
#include "scenario/fields.h"
#include "scenario/json_text.h"
#include "scenario/old_spellings.h"
#include "scenario/validate.h"

namespace kv {
namespace {

// A scenario is a page of JSON; anything this big is the wrong file, not a scenario.
constexpr std::size_t kMaxFileBytes = 4u << 20;

Scenario default_scenario(const std::string& source_path) {
  Scenario s;
  s.source_path = source_path;
  s.name = source_path.empty() ? "scenario" : std::filesystem::path(source_path).stem().string();
  // A fallback for scenario.h, whose ModelSpec leaves the layer list empty.
  if (s.model.layers.empty()) s.model.layers = {LayerKind::attention, LayerKind::attention};
  return s;
}

// The message quotes today's spelling, read in place of the file's old one: say so.
ScenarioError with_old_spelling(ScenarioError error, const std::vector<OldSpelling>& old) {
  for (const OldSpelling& o : old)
    if (o.pointer == error.pointer)
      error.message += fmt::format(" (the file writes \"{}\", the old spelling of \"{}\")",
                                   o.old_name, o.new_name);
  return error;
}

}  // namespace

std::variant<Scenario, ScenarioError> parse_scenario(std::string_view text,
                                                     std::string source_path) {
  std::vector<OldSpelling> old;
  try {
    Json doc = parse_json_text(text);
    if (!doc.is_object())
      fail("", "the top level is " + describe(doc) + "; expected a JSON object");
    check_format(doc);
    Scenario s = default_scenario(source_path);
    s.old_spellings = old = replace_old_spellings(doc);
    read_scenario_fields(doc, s);
    validate_scenario(s, doc);
    return s;
  } catch (const ScenarioFailure& f) {
    return with_old_spelling(f.error, old);
  } catch (const std::logic_error&) {  // a broken invariant of ours: kvcheck exits 4
    throw;
  } catch (const std::exception& e) {  // a bug of ours; still a result, not a crash
    return ScenarioError{"", std::string("internal error while reading the scenario: ") + e.what()};
  }
}

std::variant<Scenario, ScenarioError> load_scenario(const std::string& path) {
  InputFileError error;
  const std::optional<std::string> text = read_input_file(path, kMaxFileBytes, error);
  if (!text) {
    if (error.message.starts_with("is larger than"))
      error.message += " (4 MiB); a scenario is a page of JSON: is this the right file?";
    return ScenarioError{"", error.message};
  }
  return parse_scenario(*text, path);
}

std::string format_error(const ScenarioError& error, const std::string& path) {
  std::string out;
  if (!path.empty()) out += path + ": ";
  if (!error.pointer.empty()) out += error.pointer + ": ";
  return out + error.message;
}

}  // namespace kv
