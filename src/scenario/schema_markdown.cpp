// schema_markdown.cpp — the scenario field table of docs/scenario-format.md, generated from the
// field table.
#include "scenario/schema_markdown.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "scenario/field_table.h"

namespace kv {
namespace {

// "1,000,000" from six digits on; "65536" and "4096" as they are usually written.
std::string number_text(const Json& n) {
  if (n.is_number_float()) return fmt::format("{:.3g}", n.get<double>());
  std::string digits = n.dump();
  if (digits.size() < 6) return digits;
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

// A maximum that is only the storage type's own limit says nothing to a reader.
bool storage_limit(const Json& max) {
  return max == std::numeric_limits<int32_t>::max() ||
         max == std::numeric_limits<uint64_t>::max();
}

std::string bounds_text(const ValueForm& f) {
  if (storage_limit(f.maximum)) return "≥ " + number_text(f.minimum);
  return number_text(f.minimum) + "–" + number_text(f.maximum);
}

std::string with_note(std::string text, const ValueForm& f) {
  return f.note.empty() ? text : text + " (" + f.note + ")";
}

std::string form_text(const ValueForm& f, bool plural = false) {
  using Kind = ValueForm::Kind;
  switch (f.kind) {
    case Kind::integer:
      return with_note(std::string(plural ? "integers " : "integer ") + bounds_text(f), f);
    case Kind::number:
      return with_note(fmt::format("number, {} {} x {} {}", number_text(f.minimum),
                                   f.exclusive_minimum ? "<" : "≤",
                                   f.exclusive_maximum ? "<" : "≤", number_text(f.maximum)),
                       f);
    case Kind::boolean: return "boolean";
    case Kind::string: {
      std::string text = f.min_length > 0 ? "non-empty string" : "string";
      if (f.max_length > 0) text += fmt::format(" of at most {} bytes", f.max_length);
      if (!f.pattern.empty()) text += fmt::format(" matching `{}`", f.pattern);
      return text;
    }
    case Kind::choice: {
      std::string text;
      for (const std::string& c : f.choices)
        text += (text.empty() ? "" : " \\| ") + fmt::format("`\"{}\"`", c);
      return text;
    }
    case Kind::range: return "range, " + bounds_text(f);
    case Kind::array: {
      std::string text = "array of " + form_text(*f.items, /*plural=*/true);
      if (f.unique_items) text += ", unique";
      if (f.max_items && f.min_items > 0)
        text += fmt::format(" ({}–{} items)", f.min_items, *f.max_items);
      else if (f.max_items)
        text += fmt::format(" (at most {} items)", *f.max_items);
      else if (f.min_items > 0)
        text += fmt::format(" (at least {} items)", f.min_items);
      return text;
    }
    case Kind::constant: return fmt::format("`{}`", f.constant.dump());
    case Kind::object: return "object";
  }
  return "";
}

std::string type_text(const FieldInfo& field) {
  std::string text;
  for (const ValueForm& f : field.forms) text += (text.empty() ? "" : ", or ") + form_text(f);
  return text;
}

// A '|' inside a cell would end it.
std::string cell(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '|' && (i == 0 || text[i - 1] != '\\')) out += '\\';
    out += text[i];
  }
  return out;
}

std::string name_text(const FieldInfo& field) {
  std::string name = field.pointer.substr(1);
  for (char& c : name)
    if (c == '/') c = '.';
  return field.is_object() ? "**`" + name + "`**" : "`" + name + "`";
}

// The doc, and the renamed spellings a file may still use.
std::string doc_text(const FieldInfo& field) {
  std::string old;
  for (const RenamedChoice& r : field.renamed)
    old += fmt::format("{}`\"{}\"` for `\"{}\"`", old.empty() ? "" : ", ", r.old_name,
                       r.new_name);
  return old.empty() ? field.doc : field.doc + " Old spellings, read with a warning: " + old + ".";
}

}  // namespace

std::string scenario_fields_markdown() {
  std::string out = "| Field | Type | Default | Meaning |\n|---|---|---|---|\n";
  for (const FieldInfo& f : scenario_field_table())
    out += fmt::format("| {} | {} | {} | {} |\n", name_text(f), cell(type_text(f)),
                       cell(default_text(f)), cell(doc_text(f)));
  return out;
}

}  // namespace kv
