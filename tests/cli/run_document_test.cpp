// run_document_test.cpp — `kvcheck run --json` prints one kvcheck.run/1 document for any number
// of scenarios: its results in run order (each one its result file), then a summary whose counts,
// problem lines, --baseline comparison and exit_code are the run's; also when the run stops
// before its first result. run_document() (cli_runner.h) checks in every case that stdout is that
// one JSON value and nothing else, and that the summary's exit_code is the process's.
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/fault_injection.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using nlohmann::json;

// Poison with its regression on in the file and no expectation (so clean is expected): corrupt,
// a miss of its expectation (exit 1).
std::string poison_with_regression() {
  std::string s = kPoisonScenario;
  s.insert(s.rfind('}'), R"(, "regressions": ["new-blocks-not-zeroed"])");
  return s;
}

// kTinyScenario under another name, so that three runs have three names.
std::string tiny_named(const std::string& name) {
  std::string s = kTinyScenario;
  s.replace(s.find("\"tiny\""), 6, "\"" + name + "\"");
  return s;
}

// The first line of `text` that starts with `prefix`; "" when none does.
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

// A summary's text field holds `part`.
bool contains(const json& text, const std::string& part) {
  return text.is_string() && test::contains(text.get<std::string>(), part);
}

using RunDocumentTest = CliTest;

TEST_F(RunDocumentTest, OneScenarioIsOneResultAndASummaryThatCountsIt) {
  write("tiny.json", kTinyScenario);
  const CliRun r = kvcheck("run tiny.json --json --out out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The schema comes first, so a reader of the stream knows the document before its results.
  EXPECT_EQ(r.out.rfind("{\n  \"schema\": \"kvcheck.run/1\",\n  \"results\": [", 0), 0u) << r.out;
  const json doc = run_document(r);
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0], json::parse(read_file(dir_ / "out/tiny.json")));
  const json& s = doc["summary"];
  EXPECT_EQ(s["passed"], 1);
  for (const char* zero : {"failed", "could_not_run", "errors", "not_run", "exit_code"})
    EXPECT_EQ(s[zero], 0) << zero;
  EXPECT_EQ(s["problems"], json::array());
  EXPECT_FALSE(s.contains("baseline")) << s;
  EXPECT_GE(s["seconds"].get<double>(), 0.0);
  // The summary line printed on stderr (stdout holds the document alone).
  EXPECT_EQ(s["line"], line_starting(r.err, "1 passed, 0 failed, 0 could not run, 0 errors in "))
      << r.err;
}

TEST_F(RunDocumentTest, ThreeScenariosOneMissingItsExpectationCountAndNameIt) {
  write("a.json", kTinyScenario);
  write("b.json", poison_with_regression());
  write("c.json", tiny_named("tiny-c"));
  const CliRun r = kvcheck("run a.json b.json c.json --json --no-out");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const json doc = run_document(r);
  const json& results = doc["results"];
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0]["scenario"], "tiny");
  EXPECT_EQ(results[1]["scenario"], "poison");
  EXPECT_EQ(results[1]["verdict"], "corrupt");
  EXPECT_EQ(results[1]["meets_expectation"], false);
  EXPECT_EQ(results[2]["scenario"], "tiny-c");
  const json& s = doc["summary"];
  EXPECT_EQ(s["passed"], 2);
  EXPECT_EQ(s["failed"], 1);
  EXPECT_EQ(s["could_not_run"], 0);
  EXPECT_EQ(s["errors"], 0);
  EXPECT_EQ(s["not_run"], 0);
  EXPECT_EQ(s["exit_code"], 1);
  ASSERT_EQ(s["problems"].size(), 1u) << s;
  const std::string problem = s["problems"][0].get<std::string>();
  EXPECT_EQ(problem.rfind("FAILED poison (b.json, seed 3): verdict corrupt, expected clean; "
                          "first failure: epoch ",
                          0),
            0u)
      << problem;
  EXPECT_TRUE(contains(r.err, problem)) << "the same line as on stderr:\n" << r.err;
  EXPECT_TRUE(contains(s["line"], "2 passed, 1 failed, 0 could not run, 0 errors in ")) << s;

  // --exitfirst stops at the miss: the run after it is counted not run and has no result.
  const CliRun first = kvcheck("run a.json b.json c.json --json --no-out --exitfirst");
  ASSERT_EQ(first.exit_code, 1) << first.err;
  const json stopped = run_document(first);
  EXPECT_EQ(stopped["results"].size(), 2u);
  EXPECT_EQ(stopped["summary"]["not_run"], 1);
  EXPECT_TRUE(contains(stopped["summary"]["line"], ", 1 not run in ")) << stopped["summary"];
}

TEST_F(RunDocumentTest, TheBaselineComparisonIsInTheSummaryAndItsChangeInTheExitCode) {
  write("poison.json", kPoisonScenario);
  ASSERT_EQ(kvcheck("run poison.json --baseline base --update-baseline -q --no-out").exit_code, 0);
  // --update-baseline compares nothing: no baseline block.
  const CliRun update =
      kvcheck("run poison.json --baseline base2 --update-baseline --json --no-out");
  ASSERT_EQ(update.exit_code, 0) << update.err;
  EXPECT_FALSE(run_document(update)["summary"].contains("baseline"));

  const CliRun same = kvcheck("run poison.json --baseline base --json --no-out");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(run_document(same)["summary"]["baseline"],
            (json{{"line", "baseline: 1 compared, 0 changed"},
                  {"compared", 1},
                  {"changed", 0},
                  {"without", 0},
                  {"changes", json::array()}}));
  // Corrupt where the baseline was clean, expected corrupt: the run passes and the baseline
  // alone fails it, after the results were written: exit_code is the final status.
  const CliRun changed = kvcheck("run poison.json --regression new-blocks-not-zeroed --expect "
                                 "corrupt --baseline base --json --no-out");
  ASSERT_EQ(changed.exit_code, 1) << changed.err;
  const json s = run_document(changed)["summary"];
  EXPECT_EQ(s["passed"], 1);
  EXPECT_EQ(s["problems"], json::array());
  EXPECT_EQ(s["exit_code"], 1);
  EXPECT_EQ(s["baseline"]["changed"], 1);
  ASSERT_EQ(s["baseline"]["changes"].size(), 1u);
  EXPECT_EQ(s["baseline"]["changes"][0].get<std::string>().rfind(
                "CHANGED poison (poison.json, seed 3): verdict corrupt, was clean", 0),
            0u)
      << s;
}

TEST_F(RunDocumentTest, ARunStoppedBeforeItsFirstResultIsStillOneDocument) {
  write("long.json", kLongOpScenario);  // about a minute: far past the deadline
  write("tiny.json", kTinyScenario);
  const CliRun r = kvcheck("run long.json tiny.json --json --no-out --max-seconds 1");
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const json doc = run_document(r);
  EXPECT_EQ(doc["results"], json::array());
  const json& s = doc["summary"];
  EXPECT_EQ(s["could_not_run"], 1);
  EXPECT_EQ(s["not_run"], 1);
  for (const char* zero : {"passed", "failed", "errors"}) EXPECT_EQ(s[zero], 0) << zero;
  EXPECT_EQ(s["problems"], json::array());
  EXPECT_EQ(s["exit_code"], 3);
  EXPECT_TRUE(contains(s["line"], "0 passed, 0 failed, 1 could not run, 0 errors, 1 not run in "))
      << s;
}

TEST_F(RunDocumentTest, AnInternalErrorAtTheFirstScenarioIsStillOneDocument) {
  if (!kv::cli::kFaultHookBuiltIn)
    GTEST_SKIP() << "needs KVCHECK_INJECT_FAULT: configure with -DKVCHECK_TEST_HOOKS=ON";
  write("tiny.json", kTinyScenario);
  const CliRun r =
      kvcheck_env("KVCHECK_INJECT_FAULT=internal-error", "run tiny.json --json --no-out");
  ASSERT_EQ(r.exit_code, 4) << r.err;
  const json doc = run_document(r);
  EXPECT_EQ(doc["results"], json::array());
  EXPECT_EQ(doc["summary"]["could_not_run"], 1);
  EXPECT_EQ(doc["summary"]["exit_code"], 4);
}

}  // namespace
}  // namespace kv::test
