// help_format_test.cpp — the word wrap behind --help.
#include <gtest/gtest.h>

#include "cli/help_format.h"

namespace kv::cli {
namespace {

TEST(HelpFormat, WrapsAtWordsAndBreaksLongListsAfterCommas) {
  EXPECT_EQ(wrap_words("one two three four", 9), "one two\nthree\nfour");
  EXPECT_EQ(wrap_words("short", 80), "short");
  EXPECT_EQ(wrap_words("a\n\nb", 80), "a\n\nb");  // paragraphs kept
  EXPECT_EQ(wrap_words("x {alpha,beta,gamma,delta}", 12), "x {alpha,\nbeta,gamma,\ndelta}");
  EXPECT_EQ(wrap_words("averyveryverylongword", 5), "averyveryverylongword");  // alone, uncut
}

}  // namespace
}  // namespace kv::cli
