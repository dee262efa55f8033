// junit.cpp — writes the JUnit XML report.
#include "report/junit.h"

#include <filesystem>

#include <fmt/format.h>

#include "report/run_summary.h"

namespace kv {

namespace {

// Text and attribute values: the five entities, and C0 controls (not allowed in XML 1.0 but for
// tab, newline, return) as '?'.
std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

std::string seconds_text(double s) { return fmt::format("{:.3f}", s < 0 ? 0.0 : s); }

const char* element_of(JunitKind k) {
  switch (k) {
    case JunitKind::failure: return "failure";
    case JunitKind::error: return "error";
    case JunitKind::skipped: return "skipped";
    case JunitKind::passed: break;
  }
  return "";
}

}  // namespace

std::string junit_classname(const std::string& path) {
  std::string dir = std::filesystem::path(path).lexically_normal().parent_path().generic_string();
  while (dir.rfind("../", 0) == 0) dir.erase(0, 3);
  if (dir == ".." || dir == "." || dir.empty()) return "kvcheck";
  if (dir.front() == '/') dir.erase(0, 1);
  for (char& c : dir)
    if (c == '/' || c == '.') c = c == '/' ? '.' : '_';
  return dir;
}

JunitCase junit_case(const nlohmann::json& r, const std::string& path) {
  JunitCase c;
  c.name = r.value("scenario", std::string("?"));
  const auto backend = r.find("backend");
  if (backend != r.end() && backend->is_object())
    c.name += " [" + backend->value("name", std::string("backend")) + "]";
  c.classname = junit_classname(path);
  c.seconds = r.value("seconds", 0.0);
  switch (outcome_of(r)) {
    case ScenarioOutcome::passed: return c;
    case ScenarioOutcome::failed: {
      c.kind = JunitKind::failure;
      c.type = "mismatch";
      c.message = fmt::format("verdict {}, expected {}", r.value("verdict", std::string("?")),
                              r.value("expected", std::string("?")));
      break;
    }
    case ScenarioOutcome::error: {
      c.kind = JunitKind::error;
      const auto err = r.find("error");
      const bool has = err != r.end() && err->is_object();
      c.type = has ? err->value("kind", std::string("error")) : "error";
      c.message = has ? err->value("message", std::string()) : "the backend failed";
      break;
    }
  }
  c.detail = problem_line(r);
  return c;
}

std::string junit_xml(const JunitSuite& suite) {
  int64_t failures = 0, errors = 0, skipped = 0;
  for (const auto& c : suite.cases) {
    failures += c.kind == JunitKind::failure;
    errors += c.kind == JunitKind::error;
    skipped += c.kind == JunitKind::skipped;
  }
  const auto tests = static_cast<int64_t>(suite.cases.size());
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                   "time=\"{}\">\n",
                   escape(suite.name), tests, failures, errors, seconds_text(suite.seconds));
  x += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                   "skipped=\"{}\" time=\"{}\" timestamp=\"{}\" hostname=\"{}\">\n",
                   escape(suite.name), tests, failures, errors, skipped,
                   seconds_text(suite.seconds), escape(suite.timestamp), escape(suite.hostname));
  x += "    <properties>\n";
  for (const auto& [name, value] : suite.properties)
    x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", escape(name), escape(value));
  x += "    </properties>\n";
  for (const auto& c : suite.cases) {
    x += fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"", escape(c.name),
                     escape(c.classname), seconds_text(c.seconds));
    if (c.kind == JunitKind::passed) {
      x += "/>\n";
      continue;
    }
    x += fmt::format(">\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n",
                     element_of(c.kind), escape(c.type), escape(c.message), escape(c.detail),
                     element_of(c.kind));
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace kv
