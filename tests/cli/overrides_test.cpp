// overrides_test.cpp — the library side of `run`'s options: overrides, name checks, file names,
// and the device factory in a host-only build.
#include "cli/overrides.h"

#include <gtest/gtest.h>

#include "cli/device_factory.h"
#include "cli/name_option.h"
#include "cli/result_paths.h"
#include "cli/run_scenarios.h"

namespace kv::cli {
namespace {

TEST(Overrides, ReplaceOnlyWhatIsGiven) {
  Scenario s;
  s.seed = 1;
  s.workload.epochs = 2;
  s.regressions = {Regression::padded_rows_in_reduction};
  s.expect = Expectation::clean;
  apply_overrides({}, s);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.workload.epochs, 2);
  EXPECT_EQ(s.regressions, RegressionSet{Regression::padded_rows_in_reduction});

  Overrides o;
  o.seed = 42;
  o.epochs = 5;
  o.expect = Expectation::corrupt;
  o.regressions = RegressionSet{Regression::new_blocks_not_zeroed,
                                Regression::gather_assumes_contiguous};
  apply_overrides(o, s);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.workload.epochs, 5);
  EXPECT_EQ(s.expect, Expectation::corrupt);
  // Replaced, not merged.
  EXPECT_EQ(s.regressions, (RegressionSet{Regression::new_blocks_not_zeroed,
                                          Regression::gather_assumes_contiguous}));
}

TEST(Overrides, ZeroInitOutputsTurnsTheMitigationOnNeverOff) {
  Scenario s;
  apply_overrides({}, s);
  EXPECT_FALSE(s.engine.zero_init_outputs);
  Overrides o;
  o.zero_init_outputs = true;
  apply_overrides(o, s);
  EXPECT_TRUE(s.engine.zero_init_outputs);
  s.engine.zero_init_outputs = true;
  apply_overrides({}, s);  // the flag's absence leaves the scenario's own setting
  EXPECT_TRUE(s.engine.zero_init_outputs);
}

TEST(Overrides, ReferenceKeepsTheSampleSizeSampledRequestsImpliesSampled) {
  Scenario s;
  apply_overrides({}, s);
  EXPECT_EQ(s.checks.reference, ReferenceMode::full);

  Overrides mode;
  mode.reference = ReferenceMode::sampled;
  apply_overrides(mode, s);
  EXPECT_EQ(s.checks.reference, ReferenceMode::sampled);
  EXPECT_EQ(s.checks.sampled_requests, 8) << "the scenario's (default) sample size";

  Scenario t;
  Overrides size;
  size.sampled_requests = 3;
  apply_overrides(size, t);
  EXPECT_EQ(t.checks.reference, ReferenceMode::sampled);
  EXPECT_EQ(t.checks.sampled_requests, 3);

  Overrides full;
  full.reference = ReferenceMode::full;
  apply_overrides(full, t);
  EXPECT_EQ(t.checks.reference, ReferenceMode::full);
}

TEST(Overrides, SampledRequestsBesideReferenceFullIsRefused) {
  Overrides o;
  EXPECT_FALSE(check_reference_overrides(o));
  o.sampled_requests = 4;
  EXPECT_FALSE(check_reference_overrides(o));
  o.reference = ReferenceMode::sampled;
  EXPECT_FALSE(check_reference_overrides(o));
  o.reference = ReferenceMode::full;
  const auto error = check_reference_overrides(o);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("--sampled-requests"), std::string::npos) << *error;
  EXPECT_NE(error->find("--reference full"), std::string::npos) << *error;
}

TEST(Overrides, EmptyRegressionListTurnsAllOff) {
  Scenario s;
  s.regressions = {Regression::padded_rows_in_reduction};
  Overrides o;
  o.regressions = RegressionSet{};
  apply_overrides(o, s);
  EXPECT_TRUE(s.regressions.empty());
}

// --regression parses a registry name into its enum, once; a misspelt one names the closest.
TEST(Overrides, RegressionNamesParseIntoTheEnumWithASuggestion) {
  auto parse = [](std::vector<std::string> args, std::vector<Regression>& out) {
    CLI::App app;
    app.add_option("--regression", out)->transform(regression_name())->allow_extra_args(false);
    std::string line;
    for (const auto& a : args) line += " --regression " + a;
    try {
      app.parse(line, /*program_name_included=*/false);
      return std::string();
    } catch (const CLI::ParseError& e) {
      return std::string(e.what());
    }
  };
  std::vector<Regression> got;
  EXPECT_EQ(parse({"new-blocks-not-zeroed", "padded-rows-in-reduction"}, got), "");
  EXPECT_EQ(got, (std::vector<Regression>{Regression::new_blocks_not_zeroed,
                                          Regression::padded_rows_in_reduction}));
  const std::string typo = parse({"padded-rows-in-reduktion"}, got);
  EXPECT_NE(typo.find("did you mean \"padded-rows-in-reduction\""), std::string::npos) << typo;
  const std::string unknown = parse({"x"}, got);
  EXPECT_NE(unknown.find("unknown regression \"x\""), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("gather-assumes-contiguous"), std::string::npos) << unknown;
}

// Result files: the scenario's path below the folder the run's files share, the backend's short
// name and the variant; never outside the output folder; two runs never share one.
std::vector<std::string> result_paths(const std::vector<ResultKey>& keys) {
  std::vector<std::string> out;
  for (const auto& p : result_relative_paths(keys)) out.push_back(p.string());
  return out;
}

TEST(ResultPaths, FollowTheScenarioFilesBelowTheirSharedFolder) {
  EXPECT_EQ(result_paths({{.scenario_path = "scenarios/smoke.json"}}),
            std::vector<std::string>{"smoke.json"});
  EXPECT_EQ(result_paths({{.scenario_path = "/a/s/smoke.json"},
                          {.scenario_path = "/a/s/regressions/x.json"},
                          {.scenario_path = "/a/s/gpu/regressions/x.json"}}),
            (std::vector<std::string>{"smoke.json", "regressions/x.json",
                                      "gpu/regressions/x.json"}));
  // A relative and an absolute spelling of one folder are one folder.
  const std::string here = std::filesystem::current_path().string();
  EXPECT_EQ(result_paths({{.scenario_path = "d/a.json"}, {.scenario_path = here + "/d/e/b.json"}}),
            (std::vector<std::string>{"a.json", "e/b.json"}));
}

TEST(ResultPaths, NameTheBackendAndTheVariant) {
  EXPECT_EQ(backend_short_name("/x/libkvcheck_backend_flashinfer.so"), "flashinfer");
  EXPECT_EQ(backend_short_name("build/libmine.so.1.2"), "mine");
  EXPECT_EQ(backend_short_name("plugin"), "plugin");
  EXPECT_EQ(backend_short_name("/x/lib.so"), "lib");
  EXPECT_EQ(result_paths({{.scenario_path = "s/a.json",
                           .backend_path = "/p/libkvcheck_backend_host.so",
                           .variant = ".seed3.repeat2.clean"}}),
            std::vector<std::string>{"a.host.seed3.repeat2.clean.json"});
}

TEST(ResultPaths, StayInsideTheOutputFolder) {
  EXPECT_EQ(result_paths({{.scenario_path = "d/a b$.json"}}),
            std::vector<std::string>{"a_b_.json"});
  EXPECT_EQ(result_paths({{.scenario_path = "d/.json"}}), std::vector<std::string>{"_json.json"});
  EXPECT_EQ(result_paths({{.scenario_path = "d/x"}, {.scenario_path = "d/y z/w.json"}}),
            (std::vector<std::string>{"x.json", "y_z/w.json"}));
  for (const auto& p : result_relative_paths({{.scenario_path = "/a/../../b.json"},
                                              {.scenario_path = "/c/d.json"}})) {
    EXPECT_FALSE(p.is_absolute()) << p;
    for (const auto& part : p) EXPECT_NE(part.string(), "..") << p;
  }
}

TEST(ResultPaths, ACollisionNamesBothRuns) {
  const std::vector<ResultKey> keys{{.scenario_path = "d/a.json", .variant = ".seed1"},
                                    {.scenario_path = "d/a b.json", .variant = ""},
                                    {.scenario_path = "d/a_b.json", .variant = ""}};
  const auto clash = result_collision(keys, result_relative_paths(keys));
  ASSERT_TRUE(clash.has_value());
  EXPECT_NE(clash->find("d/a b.json and d/a_b.json would both write result file a_b.json"),
            std::string::npos)
      << *clash;
  EXPECT_FALSE(result_collision({keys[0], keys[1]}, result_relative_paths({keys[0], keys[1]})));
}

TEST(DeviceFactory, HostAlwaysAutoFallsBackCudaExplains) {
  EXPECT_EQ(make_device(DeviceKind::host)->name(), "host");
  if (!cuda_device_available()) {
    EXPECT_EQ(make_device(DeviceKind::automatic)->name(), "host");
    try {
      make_device(DeviceKind::cuda);
      FAIL() << "expected DeviceUnavailable";
    } catch (const DeviceUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("--device host"), std::string::npos) << e.what();
    }
  }
}

TEST(DeviceFactory, KindsAreSpeltAsDeviceAcceptsThem) {
  EXPECT_STREQ(to_string(DeviceKind::host), "host");
  EXPECT_STREQ(to_string(DeviceKind::cuda), "cuda");
  EXPECT_STREQ(to_string(DeviceKind::automatic), "auto");
}

}  // namespace
}  // namespace kv::cli
