// run_selection_test.cpp — which runs a `kvcheck run` takes: -k, --label, --exclude-label on the
// files, --shard I/N on the runs (disjoint shards whose union is every run, balanced by the
// estimated work), --repeat; and the bad input each can be.
#include "cli/run_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "check/run_cost.h"
#include "cli/load_scenarios.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using cli::LoadedScenario;
using cli::Selection;
using cli::Shard;
using nlohmann::json;

LoadedScenario scenario(const std::string& path, const std::string& name,
                        std::vector<std::string> labels = {}) {
  LoadedScenario l{.path = path, .scenario = {}};
  l.scenario.name = name;
  l.scenario.labels = std::move(labels);
  return l;
}

std::vector<std::string> paths_of(const std::vector<LoadedScenario>& v) {
  std::vector<std::string> out;
  for (const auto& l : v) out.push_back(l.path);
  return out;
}

std::vector<LoadedScenario> three() {
  return {scenario("s/regressions/gather.json", "gather", {"regression", "fast"}),
          scenario("s/regressions/gather-plain.json", "gather-plain", {"control"}),
          scenario("s/shapes/mla-576.json", "mla-latent-576", {"slow"})};
}

TEST(RunSelection, KeywordsAreSubstringsOrWholeGlobsOverPathAndName) {
  auto v = three();
  EXPECT_FALSE(cli::apply_selection(v, {.keywords = {"gather"}}));
  EXPECT_EQ(v.size(), 2u);
  v = three();
  EXPECT_FALSE(cli::apply_selection(v, {.keywords = {"*/gather.json"}}));  // a glob: the whole
  EXPECT_EQ(paths_of(v), std::vector<std::string>{"s/regressions/gather.json"});
  v = three();
  EXPECT_FALSE(cli::apply_selection(v, {.keywords = {"latent", "plain"}}));  // any: the name too
  EXPECT_EQ(paths_of(v), (std::vector<std::string>{"s/regressions/gather-plain.json",
                                                   "s/shapes/mla-576.json"}));
}

TEST(RunSelection, LabelsKeepAnyAndExcludedLabelsDrop) {
  auto v = three();
  EXPECT_FALSE(cli::apply_selection(v, {.labels = {"regression", "slow"}}));
  EXPECT_EQ(v.size(), 2u);
  v = three();
  EXPECT_FALSE(cli::apply_selection(v, {.excluded = {"slow"}}));
  EXPECT_EQ(v.size(), 2u);
  v = three();
  EXPECT_FALSE(cli::apply_selection(v, {.keywords = {"gather"}, .excluded = {"control"}}));
  EXPECT_EQ(paths_of(v), std::vector<std::string>{"s/regressions/gather.json"});
}

TEST(RunSelection, AnUnknownLabelOrAnEmptySelectionIsRefusedNamingTheFilter) {
  auto v = three();
  auto why = cli::apply_selection(v, {.labels = {"nightly"}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "--label nightly: no scenario of the run carries this label (labels here: "
                  "control, fast, regression, slow)");
  EXPECT_EQ(v.size(), 3u) << "nothing dropped on bad input";
  why = cli::apply_selection(v, {.excluded = {"Slow"}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("--exclude-label Slow: expected a label"), std::string::npos) << *why;
  why = cli::apply_selection(v, {.keywords = {"nothing"}, .labels = {"fast"}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "-k nothing --label fast selects none of the 3 scenario(s) given");
}

TEST(RunSelection, ShardTextIsIOfN) {
  const auto s = cli::parse_shard("2/4");
  ASSERT_TRUE(std::holds_alternative<Shard>(s));
  EXPECT_EQ(std::get<Shard>(s).index, 2);
  EXPECT_EQ(std::get<Shard>(s).count, 4);
  for (const char* bad : {"3/2", "0/2", "1/0", "2", "a/b", "1/2/3", "-1/2", "1/10001", " 1/2", ""})
    EXPECT_TRUE(std::holds_alternative<std::string>(cli::parse_shard(bad))) << bad;
  EXPECT_EQ(std::get<std::string>(cli::parse_shard("3/2")),
            "got \"3/2\", expected I/N, shard I of N with 1 <= I <= N <= 10000 (e.g. 2/4)");
}

// Every split of the shipped host scenarios (and their 5-seed sweep): the shards are disjoint,
// their union is every run, each shard in run order, and the heaviest shard's estimated work is
// within the mean plus the largest run, and within 1.25x the mean where no run is that large.
TEST(RunSelection, ShardsAreDisjointCoverEveryRunAndBalanceTheShippedSuite) {
  const std::filesystem::path root = std::filesystem::path(KVCHECK_SOURCE_DIR) / "scenarios";
  cli::LoadResult loaded =
      cli::load_scenarios({(root / "smoke.json").string(), (root / "regressions").string(),
                           (root / "seeds").string(), (root / "shapes").string(),
                           (root / "gpu/seeds").string(), (root / "gpu/regressions").string()});
  ASSERT_TRUE(loaded.ok());
  std::vector<double> one;
  for (const auto& l : loaded.valid) one.push_back(estimate_run_cost(l.scenario).work);
  std::vector<double> five;  // the same at five seeds each
  for (double w : one) five.insert(five.end(), 5, w);
  for (const auto* work : {&one, &five})
    for (int32_t n : {1, 2, 3, 4, 7, 16}) {
      const double total = std::accumulate(work->begin(), work->end(), 0.0);
      const double largest = *std::max_element(work->begin(), work->end());
      std::vector<int> seen(work->size(), 0);
      for (int32_t i = 1; i <= n; ++i) {
        const std::vector<size_t> mine = cli::shard_members(*work, {.index = i, .count = n});
        EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
        double load = 0;
        for (size_t k : mine) {
          ++seen[k];
          load += (*work)[k];
        }
        const double mean = total / n;
        EXPECT_LE(load, mean + largest) << "shard " << i << "/" << n;
        if (largest * 4 <= mean) {
          EXPECT_LE(load, 1.25 * mean) << "shard " << i << "/" << n;
        }
      }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }))
          << n << " shards over " << work->size() << " runs";
    }
}

class RunSelectionCli : public CliTest {
 protected:
  void write_labelled() {
    fs::create_directories(dir_ / "s");
    std::string a = kTinyScenario;
    a.insert(a.rfind('}'), R"(, "labels": ["fast", "regression"])");
    write("s/a.json", a);
    std::string b = kTinyScenario;
    b.insert(b.rfind('}'), R"(, "labels": ["slow"])");
    write("s/b.json", b);
    write("s/c.json", kTinyScenario);
  }
};

TEST_F(RunSelectionCli, LabelsAndKeywordsPickTheFilesAndBadFiltersAreExit2) {
  write_labelled();
  CliRun r = kvcheck("run s --label regression --out out -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_under("out"), std::vector<std::string>{"a.json"});
  r = kvcheck("run s --exclude-label slow -k '*.json' --out out2 -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files = files_under("out2");
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"a.json", "c.json"}));
  for (const std::string bad : {"--label nightly", "--label 'Bad Label'", "-k nothing"}) {
    r = kvcheck("run s --out out3 " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out3")) << bad;
  }
  EXPECT_TRUE(contains(kvcheck("run s -k nothing").err, "-k nothing selects none of the 3"));
  // The listing shows the labels.
  r = kvcheck("list scenarios s --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rows = json::parse(r.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["labels"], json::array({"fast", "regression"}));
  EXPECT_GT(rows[0]["work"].get<double>(), 0.0);
  // A label must be one in the file too.
  std::string bad = kTinyScenario;
  bad.insert(bad.rfind('}'), R"(, "labels": ["ok", "ok"])");
  write("bad.json", bad);
  r = kvcheck("validate bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "bad.json: /labels/1: label \"ok\" is listed twice")) << r.err;
}

TEST_F(RunSelectionCli, ShardsOfARunAreDisjointAndTogetherTheWholeRun) {
  write_labelled();
  std::multiset<std::string> all;
  for (int i = 1; i <= 3; ++i) {
    const std::string out = "shard" + std::to_string(i);
    CliRun r = kvcheck("run s --seeds 1-3 --shard " + std::to_string(i) + "/3 -q --out " + out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& f : files_under(out)) all.insert(f);
  }
  EXPECT_EQ(all.size(), 9u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 9u) << "disjoint";
  // More shards than runs: an empty shard runs nothing and says so.
  CliRun empty = kvcheck("run s/a.json --shard 2/2 -q --out e");
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_TRUE(contains(empty.err, "--shard 2/2: this shard holds no run")) << empty.err;
  CliRun bad = kvcheck("run s --shard 3/2");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "--shard: got \"3/2\"")) << bad.err;
}

TEST_F(RunSelectionCli, RepeatRunsEachScenarioAgainWithTheSameSeed) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --repeat 2 --seeds 4 --out out -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files = files_under("out");
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files, (std::vector<std::string>{"tiny.seed4.repeat1.json",
                                             "tiny.seed4.repeat2.json"}));
  const json a = json::parse(read_file(dir_ / "out" / files[0]));
  const json b = json::parse(read_file(dir_ / "out" / files[1]));
  EXPECT_EQ(a["scenario"], "tiny.seed4.repeat1");
  EXPECT_EQ(a["seed"], 4);
  EXPECT_EQ(b["seed"], 4);
  EXPECT_EQ(a["epochs"][0]["max_rel_error"], b["epochs"][0]["max_rel_error"]) << "deterministic";
  EXPECT_EQ(kvcheck("run tiny.json --repeat 0").exit_code, 2);
}

}  // namespace
}  // namespace kv::test
