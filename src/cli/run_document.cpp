// run_document.cpp — the run document written piece by piece on stdout.
#include "cli/run_document.h"

#include <iostream>
#include <string>

#include "report/result_json.h"
#include "report/run_schema.h"

namespace kv::cli {
namespace {

// `text` (JSON: a string value holds no raw newline) with `margin` after each of its newlines, so
// that a value dumped on its own nests inside the document as dump(2) would have laid it out.
std::string nested(const std::string& text, const std::string& margin) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    out += c;
    if (c == '\n') out += margin;
  }
  return out;
}

}  // namespace

RunDocument::RunDocument(bool on) : open_(on) {
  if (open_)
    std::cout << "{\n  \"schema\": " << nlohmann::json(kRunSchema).dump() << ",\n  \"results\": [";
}

RunDocument::~RunDocument() {
  if (open_) std::cout << (added_ ? "\n  ]\n}\n" : "]\n}\n") << std::flush;
}

void RunDocument::add(const nlohmann::json& result) {
  if (!open_) return;
  // The result as its result file holds it, two levels deeper.
  std::string text = dump_result(result);  // ends in a newline
  text.pop_back();
  std::cout << (added_ ? ",\n    " : "\n    ") << nested(text, "    ");
  added_ = true;
}

void RunDocument::close(const nlohmann::json& summary) {
  if (!open_) return;
  // `replace`, as dump_result: a stray invalid UTF-8 byte in a problem line must not throw here.
  const std::string text = summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::cout << (added_ ? "\n  ],\n" : "],\n") << "  \"summary\": " << nested(text, "  ") << "\n}\n";
  open_ = false;
}

}  // namespace kv::cli
