// sha256_test.cpp — the digest a result records for a backend library is standard SHA-256.
#include "plugin/sha256.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(nullptr, 0),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string abc = "abc";
  EXPECT_EQ(sha256_hex(reinterpret_cast<const uint8_t*>(abc.data()), abc.size()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks: the padding crosses a block boundary.
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(reinterpret_cast<const uint8_t*>(two.data()), two.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FileOfAMillionBytesAndAMissingFile) {
  const auto path = std::filesystem::temp_directory_path() / "kvcheck_sha256_test.bin";
  std::ofstream(path, std::ios::binary) << std::string(1'000'000, 'a');
  EXPECT_EQ(sha256_file(path.string()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::filesystem::remove(path);
  EXPECT_THROW(sha256_file(path.string()), std::runtime_error);
}

}  // namespace
}  // namespace kv
