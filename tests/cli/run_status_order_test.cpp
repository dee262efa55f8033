// run_status_order_test.cpp — one order decides a multi-scenario run's status (exit_codes.h
// worse_status): interrupted > internal error (4) > mismatch (1) > cannot run (3) > ok (0). A
// scenario found bad is never hidden by a later one that could not run (git bisect would skip a
// commit kvcheck found bad). And two scenarios whose results would be the same file are refused
// before anything runs (exit 2, naming both).
#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using kv::cli::worse_status;

// Clean output where "corrupt" is expected: a mismatch, in well under a second.
const char* kMismatch = R"({
  "format": 1, "name": "mismatch", "seed": 3, "model": {"layers": 1}, "expect": "corrupt",
  "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4], "epochs": 1}
})";

TEST(WorseStatus, TheStatedOrder) {
  EXPECT_EQ(worse_status(0, 3), 3);
  EXPECT_EQ(worse_status(1, 3), 1);  // the point: a mismatch is not hidden by a cannot-run
  EXPECT_EQ(worse_status(3, 1), 1);
  EXPECT_EQ(worse_status(1, 4), 4);
  EXPECT_EQ(worse_status(4, 1), 4);
  EXPECT_EQ(worse_status(4, 130), 130);
  EXPECT_EQ(worse_status(143, 1), 143);
  EXPECT_EQ(worse_status(129, 0), 129);
  EXPECT_EQ(worse_status(0, 0), 0);
  EXPECT_EQ(worse_status(125, 1), 1);
}

class RunStatusOrder : public CliTest {};

TEST_F(RunStatusOrder, AMismatchIsNotHiddenByALaterDeadline) {
  write("a.json", kMismatch);
  write("b.json", kLongOpScenario);  // about a minute: far past the deadline
  for (const std::string bisect : {"", " --bisect"}) {
    fs::remove_all(dir_ / "out");
    const CliRun r = kvcheck("run a.json b.json --out out --max-seconds 2" + bisect);
    EXPECT_EQ(r.exit_code, 1) << r.err;  // was 3 (125 under --bisect: skip a bad commit)
    EXPECT_TRUE(contains(r.err, "--max-seconds 2 reached while running long-op")) << r.err;
    EXPECT_TRUE(contains(r.err, "a mismatch outranks a run that could not finish")) << r.err;
    EXPECT_EQ(files_under("out"), std::vector<std::string>{"a.json"});
  }
}

TEST_F(RunStatusOrder, JsonStaysOneDocumentWhenTheRunStopsEarly) {
  write("a.json", kMismatch);
  write("b.json", kLongOpScenario);  // about a minute: far past the deadline
  const CliRun r = kvcheck("run a.json b.json --out out --max-seconds 2 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json docs = run_results(r);  // fails unless stdout is one run document
  ASSERT_TRUE(docs.is_array());
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["scenario"], "mismatch");
}

TEST_F(RunStatusOrder, ACannotRunAloneIsStill3) {
  write("b.json", kLongOpScenario);  // about a minute: far past the deadline
  const CliRun r = kvcheck("run b.json --out out --max-seconds 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

// Results are named after the scenario files, not their "name"s: two files of one name, or of
// one file name in two folders, each write their own.
TEST_F(RunStatusOrder, ScenariosOfOneNameWriteOneResultEach) {
  write("a.json", kTinyScenario);
  write("b.json", kTinyScenario);  // the same "name": tiny
  fs::create_directories(dir_ / "sub");
  write("sub/a.json", kTinyScenario);
  const CliRun r = kvcheck("run a.json b.json sub/a.json --out out --seeds 1-2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files = files_under("out");
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"a.seed1.json", "a.seed2.json", "b.seed1.json",
                                             "b.seed2.json", "sub/a.seed1.json",
                                             "sub/a.seed2.json"}));
  const nlohmann::json doc = nlohmann::json::parse(read_file(dir_ / "out/sub/a.seed2.json"));
  EXPECT_EQ(doc["scenario"], "tiny.seed2");
  EXPECT_EQ(doc["seed"], 2);
}

TEST_F(RunStatusOrder, TwoRunsWritingOneResultFileAreRefused) {
  write("a.json", kTinyScenario);
  const CliRun r = kvcheck("run a.json a.json --out out");  // one file twice
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "a.json and a.json would both write result file a.json: run them "
                              "with separate --out folders"))
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "refused before anything ran";
  // File names that differ but map to one result file ("a b" and "a_b" are both a_b.json).
  write("a b.json", kTinyScenario);
  write("a_b.json", kTinyScenario);
  const CliRun mapped = kvcheck("run 'a b.json' a_b.json --out out");
  EXPECT_EQ(mapped.exit_code, 2) << mapped.err;
  EXPECT_TRUE(contains(mapped.err, "would both write result file a_b.json")) << mapped.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  // Without result files nothing collides.
  EXPECT_EQ(kvcheck("run a.json a.json --no-out").exit_code, 0);
}

}  // namespace
}  // namespace kv::test
