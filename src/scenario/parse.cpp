// parse.cpp — the entry points of scenario reading: text or file in, Scenario or first error out.
#include "scenario/parse.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "io/input_file.h"
#include "scenario/field_setting.h"
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

// RFC 6901 tokens of a pointer ("/a/b~1c" -> a, b/c).
std::vector<std::string> pointer_tokens(const std::string& pointer) {
  std::vector<std::string> tokens;
  for (size_t at = 1; at <= pointer.size();) {
    const size_t next = std::min(pointer.find('/', at), pointer.size());
    std::string t;
    for (size_t i = at; i < next; ++i) {
      if (pointer[i] == '~' && i + 1 < next && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        t += pointer[++i] == '0' ? '~' : '/';
      } else {
        t += pointer[i];
      }
    }
    tokens.push_back(std::move(t));
    at = next + 1;
  }
  return tokens;
}

// Writes each --set value at its pointer, making the objects on the way; the field table then
// reads the document as if the file had said so.
void apply_settings(Json& doc, const std::vector<FieldSetting>& settings) {
  for (const FieldSetting& set : settings) {
    const std::vector<std::string> tokens = pointer_tokens(set.pointer);
    Json* at = &doc;
    std::string where;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const bool last = i + 1 == tokens.size();
      const std::string& t = tokens[i];
      if (at->is_array()) {
        size_t index = 0;
        const bool numeric = !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
        if (numeric) index = std::stoul(t.substr(0, 9));
        if (!numeric || t.size() > 9 || index >= at->size())
          fail(where, fmt::format("--set {}: {} has no element {} (it holds {})", set.given,
                                  where.empty() ? "the document" : where, t, at->size()));
        at = &(*at)[index];
        where = child_pointer(where, index);
      } else if (at->is_object()) {
        if (!last && !at->contains(t)) (*at)[t] = Json::object();
        at = &(*at)[t];
        where = child_pointer(where, t);
      } else {
        fail(where, fmt::format("--set {}: {} is {}, not an object or array to set {} in",
                                set.given, where, describe(*at), t));
      }
      if (last) *at = Json::parse(set.value_json);
    }
  }
}

// An error at, under or above (not the document itself) a field that --set changed says so.
ScenarioError with_setting(ScenarioError error, const std::vector<FieldSetting>& settings) {
  for (const FieldSetting& set : settings)
    if (error.pointer == set.pointer || error.pointer.starts_with(set.pointer + "/") ||
        (!error.pointer.empty() && set.pointer.starts_with(error.pointer + "/"))) {
      if (error.message.find("--set ") == std::string::npos)
        error.message += " (given by --set " + set.given + ")";
      break;
    }
  return error;
}

}  // namespace

std::variant<Scenario, ScenarioError> parse_scenario(std::string_view text,
                                                     std::string source_path) {
  return parse_scenario(text, std::move(source_path), {});
}

std::variant<Scenario, ScenarioError> parse_scenario(std::string_view text,
                                                     std::string source_path,
                                                     const std::vector<FieldSetting>& settings) {
  std::vector<OldSpelling> old;
  try {
    Json doc = parse_json_text(text);
    if (!doc.is_object())
      fail("", "the top level is " + describe(doc) + "; expected a JSON object");
    check_format(doc);
    Scenario s = default_scenario(source_path);
    s.old_spellings = old = replace_old_spellings(doc);
    apply_settings(doc, settings);
    read_scenario_fields(doc, s);
    validate_scenario(s, doc);
    return s;
  } catch (const ScenarioFailure& f) {
    return with_setting(with_old_spelling(f.error, old), settings);
  } catch (const std::logic_error&) {  // a broken invariant of ours: kvcheck exits 4
    throw;
  } catch (const std::exception& e) {  // a bug of ours; still a result, not a crash
    return ScenarioError{"", std::string("internal error while reading the scenario: ") + e.what()};
  }
}

std::variant<Scenario, ScenarioError> load_scenario(const std::string& path) {
  return load_scenario(path, {});
}

std::variant<Scenario, ScenarioError> load_scenario(const std::string& path,
                                                    const std::vector<FieldSetting>& settings) {
  InputFileError error;
  const std::optional<std::string> text = read_input_file(path, kMaxFileBytes, error);
  if (!text) {
    if (error.message.starts_with("is larger than"))
      error.message += " (4 MiB); a scenario is a page of JSON: is this the right file?";
    return ScenarioError{"", error.message};
  }
  return parse_scenario(*text, path, settings);
}

std::string format_error(const ScenarioError& error, const std::string& path) {
  std::string out;
  if (!path.empty()) out += path + ": ";
  if (!error.pointer.empty()) out += error.pointer + ": ";
  return out + error.message;
}

}  // namespace kv
