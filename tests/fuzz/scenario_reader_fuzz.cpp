// scenario_reader_fuzz.cpp — libFuzzer target for the scenario reader: bytes in, what
// `kvcheck validate` does with a file's contents out (parse, validate, estimate the cost and print
// it), with no file system. Built only by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,
// undefined; tests/fuzz/CMakeLists.txt), never by the normal build.
//
// Any input must end as a Scenario or a ScenarioError. A crash, a sanitizer report or an escaping
// exception is a kvcheck bug: a std::logic_error is an invariant of kvcheck's own that broke
// (`kvcheck validate` exits 4), anything else would escape the reader's contract (parse.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <variant>

#include "check/run_cost.h"
#include "report/cost_text.h"
#include "scenario/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = kv::parse_scenario(text, "fuzz.json");
  std::ostringstream out;
  if (const auto* error = std::get_if<kv::ScenarioError>(&parsed)) {
    out << kv::format_error(*error, "fuzz.json");
    // An error located by a pointer names a place in the document: RFC 6901's leading '/'.
    if (!error->pointer.empty() && error->pointer[0] != '/') std::abort();
    if (error->message.empty()) std::abort();
    return 0;
  }
  const kv::RunCost cost = kv::estimate_run_cost(std::get<kv::Scenario>(parsed));
  kv::print_run_cost(out, cost);
  return 0;
}
