// decode_path_env_test.cpp — KVCHECK_DECODE_PATH's values: accepted ones pass, anything else is an
// error naming the accepted values (kvcheck turns it into exit 2 before running anything).
#include "kernels/cuda/decode_path_env.h"

#include <gtest/gtest.h>

namespace kv::cuda {
namespace {

TEST(DecodePathEnv, AcceptsUnsetEmptyAutomaticAndGeneric) {
  EXPECT_EQ(parse_decode_path_env(nullptr), DecodePathEnv::automatic);
  EXPECT_EQ(parse_decode_path_env(""), DecodePathEnv::automatic);
  EXPECT_EQ(parse_decode_path_env("automatic"), DecodePathEnv::automatic);
  EXPECT_EQ(parse_decode_path_env("generic"), DecodePathEnv::generic);
  for (const char* ok : {static_cast<const char*>(nullptr), "", "automatic", "generic"})
    EXPECT_FALSE(decode_path_env_error(ok).has_value());
}

TEST(DecodePathEnv, AnythingElseIsAnErrorNamingTheAcceptedValues) {
  for (const char* bad : {"mla_tc", "Generic", "generic ", "auto"}) {
    EXPECT_EQ(parse_decode_path_env(bad), DecodePathEnv::invalid) << bad;
    const auto error = decode_path_env_error(bad);
    ASSERT_TRUE(error.has_value()) << bad;
    EXPECT_NE(error->find(std::string("'") + bad + "'"), std::string::npos) << *error;
    EXPECT_NE(error->find("automatic and generic"), std::string::npos) << *error;
  }
}

}  // namespace
}  // namespace kv::cuda
