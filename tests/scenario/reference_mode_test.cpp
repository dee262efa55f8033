// reference_mode_test.cpp — checks.reference and checks.sampled_requests: accepted values and
// defaults, and each error at its JSON pointer with what was found and what was expected.
#include <gtest/gtest.h>

#include "scenario/parse.h"

namespace kv {
namespace {

Scenario parse_ok(std::string_view text) {
  auto r = parse_scenario(text, "");
  if (auto* e = std::get_if<ScenarioError>(&r)) {
    ADD_FAILURE() << format_error(*e, "<text>");
    return {};
  }
  return std::get<Scenario>(r);
}

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

struct BadCase {
  const char* label;
  const char* text;
  const char* pointer;
  const char* phrase;
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.label; }

class BadReferenceMode : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadReferenceMode, ReportsPointerAndReason) {
  const BadCase& c = GetParam();
  const auto r = parse_scenario(c.text, "bad.json");
  ASSERT_TRUE(std::holds_alternative<ScenarioError>(r)) << "parsed, but should not have";
  const ScenarioError& e = std::get<ScenarioError>(r);
  EXPECT_EQ(e.pointer, c.pointer) << e.message;
  EXPECT_NE(e.message.find(c.phrase), std::string::npos)
      << "message: " << e.message << "\nexpected to contain: " << c.phrase;
}

const BadCase kBadCases[] = {
    {"bad_mode_suggestion", R"({"format": 1, "checks": {"reference": "sample"}})",
     "/checks/reference",
     R"(got "sample" (a string), expected one of "full", "sampled"; did you mean "sampled"?)"},
    {"mode_wrong_type", R"({"format": 1, "checks": {"reference": true}})", "/checks/reference",
     R"(got true (a boolean), expected one of "full", "sampled")"},
    {"zero_requests", R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": 0}})",
     "/checks/sampled_requests", "got 0, expected an integer from 1 to 100000"},
    {"negative_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": -3}})",
     "/checks/sampled_requests", "got -3, expected an integer from 1 to 100000"},
    {"too_many_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": 100001}})",
     "/checks/sampled_requests", "got 100001, expected an integer from 1 to 100000"},
    {"fractional_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sampled_requests": 2.5}})",
     "/checks/sampled_requests", "got 2.5, expected an integer"},
    {"requests_with_default_full", R"({"format": 1, "checks": {"sampled_requests": 4}})",
     "/checks/sampled_requests",
     R"(got 4, but checks.reference is "full" (the default): every request is checked against )"
     R"(the reference, so there is no sample to size; remove sampled_requests or set )"
     R"(checks.reference to "sampled")"},
    {"requests_with_written_full",
     R"({"format": 1, "checks": {"sampled_requests": 4, "reference": "full"}})",
     "/checks/sampled_requests", R"(got 4, but checks.reference is "full": every request)"},
    {"misspelt_reference", R"({"format": 1, "checks": {"refrence": "sampled"}})",
     "/checks/refrence", R"(unknown key; did you mean "reference"?)"},
    {"misspelt_sampled_requests",
     R"({"format": 1, "checks": {"reference": "sampled", "sample_requests": 4}})",
     "/checks/sample_requests", R"(unknown key; did you mean "sampled_requests"?)"},
    {"reference_at_the_top_level", R"({"format": 1, "reference": "sampled"})", "/reference",
     "unknown key"},
};

INSTANTIATE_TEST_SUITE_P(Malformed, BadReferenceMode, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace kv
