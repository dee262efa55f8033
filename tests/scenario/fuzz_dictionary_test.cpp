// fuzz_dictionary_test.cpp — the fuzzer's dictionary (tests/fuzz/scenario.dict) names every key of
// the field table and every spelling of every choice (old spellings too), so that a field added
// to the format is fuzzed from its first day.
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "scenario/field_table.h"

namespace kv {
namespace {

std::string read_dictionary() {
  std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/tests/fuzz/scenario.dict",
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open tests/fuzz/scenario.dict";
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzDictionary, NamesEveryKeyAndEveryChoice) {
  const std::string dict = read_dictionary();
  for (const FieldInfo& field : scenario_field_table()) {
    const std::string key = field.key();
    if (key.empty()) continue;
    EXPECT_NE(dict.find("=\"\\\"" + key + "\\\":\"\n"), std::string::npos)
        << "tests/fuzz/scenario.dict lacks the key of " << field.pointer << ": add the line\n"
        << "key_" << key << "=\"\\\"" << key << "\\\":\"";
    for (const ValueForm& outer : field.forms)
      for (const ValueForm* form = &outer; form != nullptr; form = form->items.get())
        for (const std::string& choice : form->choices)
          EXPECT_NE(dict.find("=\"\\\"" + choice + "\\\"\"\n"), std::string::npos)
              << "tests/fuzz/scenario.dict lacks the choice \"" << choice << "\" of "
              << field.pointer;
    for (const RenamedChoice& r : field.renamed)
      EXPECT_NE(dict.find("=\"\\\"" + r.old_name + "\\\"\"\n"), std::string::npos)
          << "tests/fuzz/scenario.dict lacks the old spelling \"" << r.old_name << "\" of "
          << field.pointer;
  }
}

TEST(FuzzDictionary, NestsDeeperThanTheLimit) {
  EXPECT_NE(read_dictionary().find(std::string(70, '[')), std::string::npos);
}

}  // namespace
}  // namespace kv
