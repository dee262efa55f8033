// junit_test.cpp — the JUnit report: counts per kind, escaping, and a result document's case.
#include <gtest/gtest.h>

#include "report/junit.h"

namespace kv {
namespace {

using nlohmann::json;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Junit, CountsEachKindAndEscapesWhatXmlCannotCarry) {
  JunitSuite suite;
  suite.timestamp = "2026-12-07T12:00:00Z";
  suite.hostname = "ci";
  suite.seconds = 12.5;
  suite.properties = {{"kvcheck.command_line", "kvcheck run a.json --seeds 1-2 --junit \"r.xml\""}};
  auto add = [&](std::string name, std::string classname, double seconds, JunitKind kind,
                 std::string type, std::string message, std::string detail) {
    suite.cases.push_back({std::move(name), std::move(classname), seconds, kind, std::move(type),
                           std::move(message), std::move(detail)});
  };
  add("a.seed1", "scenarios", 0.25, JunitKind::passed, "", "", "");
  add("b <&> 'q'", "scenarios.regressions", 1.0, JunitKind::failure, "mismatch",
      "verdict corrupt, expected clean", "line one\nbell \x07 here");
  add("c", "x", 0.0, JunitKind::error, "crash", "backend op paged_decode crashed (SIGSEGV)", "");
  add("d", "x", 0.0, JunitKind::skipped, "not_run", "not run", "");
  const std::string x = junit_xml(suite);
  EXPECT_TRUE(contains(x, "<testsuites name=\"kvcheck\" tests=\"4\" failures=\"1\" errors=\"1\" "
                          "time=\"12.500\">")) << x;
  EXPECT_TRUE(contains(x, "tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\" time=\"12.500\" "
                          "timestamp=\"2026-12-07T12:00:00Z\" hostname=\"ci\">")) << x;
  EXPECT_TRUE(contains(x, "<testcase name=\"a.seed1\" classname=\"scenarios\" time=\"0.250\"/>"));
  EXPECT_TRUE(contains(x, "name=\"b &lt;&amp;&gt; &apos;q&apos;\"")) << x;
  EXPECT_TRUE(contains(x, ">line one\nbell ? here</failure>")) << x;
  EXPECT_TRUE(contains(x, "<error type=\"crash\" message=\"backend op paged_decode crashed "
                          "(SIGSEGV)\">")) << x;
  EXPECT_TRUE(contains(x, "<skipped type=\"not_run\" message=\"not run\"></skipped>")) << x;
  EXPECT_TRUE(contains(x, "value=\"kvcheck run a.json --seeds 1-2 --junit &quot;r.xml&quot;\""));
}

TEST(Junit, AResultDocumentsCase) {
  const json passed = {{"scenario", "smoke.seed2"}, {"verdict", "clean"}, {"expected", "clean"},
                       {"meets_expectation", true}, {"seconds", 0.5}};
  JunitCase c = junit_case(passed, "scenarios/smoke.json");
  EXPECT_EQ(c.name, "smoke.seed2");
  EXPECT_EQ(c.classname, "scenarios");
  EXPECT_EQ(c.kind, JunitKind::passed);
  EXPECT_DOUBLE_EQ(c.seconds, 0.5);

  json missed = passed;
  missed["verdict"] = "corrupt";
  missed["meets_expectation"] = false;
  missed["backend"] = {{"name", "flashinfer"}};
  c = junit_case(missed, "scenarios/shapes/x.json");
  EXPECT_EQ(c.name, "smoke.seed2 [flashinfer]");
  EXPECT_EQ(c.classname, "scenarios.shapes");
  EXPECT_EQ(c.kind, JunitKind::failure);
  EXPECT_EQ(c.message, "verdict corrupt, expected clean");
  EXPECT_TRUE(contains(c.detail, "FAILED smoke.seed2")) << c.detail;

  json crashed = passed;
  crashed["verdict"] = "error";
  crashed["error"] = {{"kind", "hang"}, {"message", "backend op merge_states did not return"}};
  c = junit_case(crashed, "s.json");
  EXPECT_EQ(c.kind, JunitKind::error);
  EXPECT_EQ(c.type, "hang");
  EXPECT_EQ(c.classname, "kvcheck");
}

TEST(Junit, ClassnamesFromPaths) {
  EXPECT_EQ(junit_classname("scenarios/regressions/a.json"), "scenarios.regressions");
  EXPECT_EQ(junit_classname("./scenarios/a.json"), "scenarios");
  EXPECT_EQ(junit_classname("../x/v1.2/a.json"), "x.v1_2");
  EXPECT_EQ(junit_classname("/abs/dir/a.json"), "abs.dir");
  EXPECT_EQ(junit_classname("a.json"), "kvcheck");
}

}  // namespace
}  // namespace kv
