// junit.h — a run as a JUnit XML report (--junit FILE), the format GitLab, Jenkins and GitHub
// test-report actions read: one <testcase> per scenario run (scenario x seed x backend), a
// <failure> for a missed expectation, an <error> for a backend that failed or a run that could not
// go on, <skipped> for what was not run. Its counts are the summary line's (report/run_summary.h).
// Valid under the JUnit XSD vendored in tests/junit/ (ctest schema/junit-xsd).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kv {

enum class JunitKind { passed, failure, error, skipped };

struct JunitCase {
  std::string name;       // the run: "<scenario name>[.seed<N>][ [backend]]"
  std::string classname;  // the scenario file's folder, dotted: "scenarios.regressions"
  double seconds = 0.0;
  JunitKind kind = JunitKind::passed;
  std::string type;     // failure/error/skipped type: "mismatch", "crash", "cannot_run", ...
  std::string message;  // one line
  std::string detail;   // the element's text
};

struct JunitSuite {
  std::string name = "kvcheck";
  std::string timestamp;  // UTC, ISO 8601
  std::string hostname;
  double seconds = 0.0;
  std::vector<std::pair<std::string, std::string>> properties;  // version, commit, command line
  std::vector<JunitCase> cases;
};

// The case of a result document (report/result_json.h) for the scenario file at `path`.
JunitCase junit_case(const nlohmann::json& result, const std::string& path);

// "scenarios/regressions/x.json" -> "scenarios.regressions"; "x.json" -> "kvcheck".
std::string junit_classname(const std::string& path);

// The whole document, UTF-8, characters XML 1.0 cannot carry replaced by '?'.
std::string junit_xml(const JunitSuite& suite);

}  // namespace kv
