// suggest_test.cpp — edit distance and "did you mean" suggestions.
#include <gtest/gtest.h>

#include "scenario/suggest.h"

namespace kv {
namespace {

TEST(EditDistance, CountsInsertDeleteSubstitute) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("max_tokens_per_stp", "max_tokens_per_step"), 1u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
}

TEST(ClosestName, PicksTheNearestPlausibleTypo) {
  const std::vector<std::string> keys = {"num_blocks", "block_size", "dtype", "layout"};
  EXPECT_EQ(closest_name("blocksize", keys), "block_size");
  EXPECT_EQ(closest_name("dtyp", keys), "dtype");
  EXPECT_EQ(closest_name("num_block", keys), "num_blocks");
}

TEST(ClosestName, RefusesNamesThatAreNotTypos) {
  const std::vector<std::string> kinds = {"attention", "mla", "linear"};
  // "gqa" is 2 edits from "mla": too far for a name of 3 letters.
  EXPECT_FALSE(closest_name("gqa", kinds).has_value());
  EXPECT_FALSE(closest_name("colour", {"num_blocks", "block_size"}).has_value());
  EXPECT_FALSE(closest_name("x", {}).has_value());
}

TEST(SuggestionTail, SuggestsOrListsTheChoices) {
  EXPECT_EQ(suggestion_tail("inff", {"none", "nan", "inf"}), "; did you mean \"inf\"?");
  EXPECT_EQ(suggestion_tail("zzzzzz", {"none", "nan"}), "; expected one of \"none\", \"nan\"");
}

}  // namespace
}  // namespace kv
