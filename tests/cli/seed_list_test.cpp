// seed_list_test.cpp — `--seeds` lists: ranges and single seeds in the order written, and each
// refusal says what is wrong.
#include <gtest/gtest.h>

#include "cli/seed_list.h"

namespace kv::cli {
namespace {

std::vector<uint64_t> seeds(const std::string& text) {
  auto parsed = parse_seed_list(text);
  if (auto* error = std::get_if<std::string>(&parsed)) ADD_FAILURE() << text << ": " << *error;
  return std::get_if<std::vector<uint64_t>>(&parsed) ? std::get<std::vector<uint64_t>>(parsed)
                                                      : std::vector<uint64_t>{};
}

std::string refusal(const std::string& text) {
  auto parsed = parse_seed_list(text);
  auto* error = std::get_if<std::string>(&parsed);
  return error ? *error : "";
}

TEST(SeedList, RangesAndSeedsInTheOrderWritten) {
  EXPECT_EQ(seeds("7"), (std::vector<uint64_t>{7}));
  EXPECT_EQ(seeds("1-3,33,0"), (std::vector<uint64_t>{1, 2, 3, 33, 0}));
  EXPECT_EQ(seeds("5-5"), (std::vector<uint64_t>{5}));
  EXPECT_EQ(seeds("18446744073709551614-18446744073709551615"),
            (std::vector<uint64_t>{18446744073709551614ull, 18446744073709551615ull}));
  EXPECT_EQ(seeds("1-10000").size(), kMaxSeeds);
}

TEST(SeedList, EachRefusalSaysWhy) {
  EXPECT_NE(refusal("5-1").find("goes down"), std::string::npos);
  EXPECT_NE(refusal("1,2,1").find("seed 1 is named twice"), std::string::npos);
  EXPECT_NE(refusal("1-3,2").find("seed 2 is named twice"), std::string::npos);
  EXPECT_NE(refusal("1-10001").find("more than 10000 seeds"), std::string::npos);
  EXPECT_NE(refusal("1-5000,6000-11000").find("more than 10000 seeds"), std::string::npos);
  for (const std::string bad : {"", ",", "1,", "a", "1-", "-1", "+1", "1-2-3", "1 ", "0x10",
                                "18446744073709551616"})
    EXPECT_NE(refusal(bad).find("is not a seed or a range"), std::string::npos) << bad;
}

}  // namespace
}  // namespace kv::cli
