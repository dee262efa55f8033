// json_text.cpp — JSON parsing with line/column errors and duplicate-key detection.
#include "scenario/json_text.h"

#include <set>
#include <vector>

#include <fmt/format.h>

namespace kv {
namespace {

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 2:
// syntax error while parsing …"; keep what follows the location, which is the useful part.
// Bytes outside ASCII become '?': the "last read" part may quote the invalid UTF-8 that caused
// the error, and a message must print cleanly.
std::string parser_reason(const std::string& what) {
  const std::size_t start = what.find("parse error");
  const std::size_t colon = start == std::string::npos ? start : what.find(": ", start);
  std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
  for (char& c : reason)
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  return reason;
}

// Follows the parser's events to know the pointer of the value being read and the keys already
// seen in each open object. Records the first repeated key; parsing itself goes on.
class DuplicateKeyWatch {
 public:
  bool on_event(nlohmann::json::parse_event_t event, const Json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
        open_.push_back({false, 0, {}, {}});
        check_depth();
        break;
      case E::array_start:
        open_.push_back({true, 0, {}, {}});
        check_depth();
        break;
      case E::key: {
        Frame& f = open_.back();
        f.key = parsed.get<std::string>();
        if (!f.seen.insert(f.key).second && !first_.has_value())
          first_ = ScenarioError{pointer(), "key \"" + f.key +
                                                "\" appears twice in the same object; keep one"};
        break;
      }
      case E::object_end:
      case E::array_end:
        open_.pop_back();
        element_done();
        break;
      case E::value: element_done(); break;
    }
    return true;
  }

  const std::optional<ScenarioError>& first_duplicate() const { return first_; }

  // The pointer of the value being read: the key or element whose value has not completed.
  std::string pointer() const { return pointer_of(open_); }

 private:
  struct Frame {
    bool is_array;
    std::size_t index;  // arrays: elements completed so far = index of the current one
    std::string key;    // objects: the key being read
    std::set<std::string> seen;
  };

  // Called with the new array or object open, before any of its contents are read: the parse
  // stops there, so nothing deeper is built.
  void check_depth() const {
    if (open_.size() <= kMaxJsonDepth) return;
    std::vector<Frame> outer(open_.begin(), open_.end() - 1);
    fail(pointer_of(outer), fmt::format("arrays and objects nest deeper than {} levels here; a "
                                        "scenario needs a handful (is this the right file?)",
                                        kMaxJsonDepth));
  }

  static std::string pointer_of(const std::vector<Frame>& frames) {
    std::string p;
    for (const Frame& f : frames)
      p = f.is_array ? child_pointer(p, f.index) : child_pointer(p, f.key);
    return p;
  }

  void element_done() {
    if (!open_.empty() && open_.back().is_array) ++open_.back().index;
  }

  std::vector<Frame> open_;
  std::optional<ScenarioError> first_;
};

}  // namespace

TextPosition position_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  TextPosition pos;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

Json parse_json_text(std::string_view text) {
  DuplicateKeyWatch watch;
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end(),
                      [&watch](int, nlohmann::json::parse_event_t event, Json& parsed) {
                        return watch.on_event(event, parsed);
                      });
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts the bytes read, the offending one included: it is 1-based.
    const TextPosition pos = position_of(text, e.byte == 0 ? 0 : e.byte - 1);
    fail("", fmt::format("line {}, column {}: {}", pos.line, pos.column, parser_reason(e.what())));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond the range of a double (1e400): JSON's only way to spell an infinity.
    // nlohmann says "number overflow parsing '1e400'"; keep the number.
    const std::string what = e.what();
    const std::size_t first = what.find('\''), last = what.rfind('\'');
    const std::string number =
        first < last ? what.substr(first + 1, last - first - 1) : std::string("a number");
    fail(watch.pointer(), fmt::format("got {}, which is beyond the range of a double (about "
                                      "1.8e308); expected a finite number",
                                      number));
  }
  if (watch.first_duplicate()) throw ScenarioFailure{*watch.first_duplicate()};
  return doc;
}

}  // namespace kv
