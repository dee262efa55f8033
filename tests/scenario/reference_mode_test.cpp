// reference_mode_test.cpp — checks.reference and checks.sampled_requests: accepted values and
// defaults. Its errors (each at its JSON pointer) are cases of tests/scenario/parse_errors_test.cpp.
#include <gtest/gtest.h>

#include "scenario/parse.h"
#include "tests/scenario/parse_ok.h"

namespace kv {
namespace {

TEST(ReferenceMode, DefaultsToFull) {
  const Scenario s = parse_ok(R"({"format": 1})");
  EXPECT_EQ(s.checks.reference, ReferenceMode::full);
  EXPECT_EQ(parse_ok(R"({"format": 1, "checks": {"reference": "full"}})").checks.reference,
            ReferenceMode::full);
}

TEST(ReferenceMode, SampledDefaultsToEightRequests) {
  const Scenario s = parse_ok(R"({"format": 1, "checks": {"reference": "sampled"}})");
  EXPECT_EQ(s.checks.reference, ReferenceMode::sampled);
  EXPECT_EQ(s.checks.sampled_requests, 8);
}

TEST(ReferenceMode, SampledRequestsIsRead) {
  const Scenario s = parse_ok(
      R"({"format": 1, "checks": {"sampled_requests": 3, "reference": "sampled", "drift": true}})");
  EXPECT_EQ(s.checks.reference, ReferenceMode::sampled);
  EXPECT_EQ(s.checks.sampled_requests, 3);
  // More than the epoch's requests is fine: then every request is checked.
  const Scenario big = parse_ok(R"({"format": 1, "workload": {"requests": 2},
      "checks": {"reference": "sampled", "sampled_requests": 100000}})");
  EXPECT_EQ(big.checks.sampled_requests, 100000);
}

TEST(ReferenceMode, SpelledAsTheFormatSpellsIt) {
  EXPECT_STREQ(to_string(ReferenceMode::full), "full");
  EXPECT_STREQ(to_string(ReferenceMode::sampled), "sampled");
}

}  // namespace
}  // namespace kv
