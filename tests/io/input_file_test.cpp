// input_file_test.cpp — read_input_file takes regular files only, never blocks on a FIFO, and
// never reads more than its cap + 1 bytes, whatever stat() says (a symlink to /dev/zero).
#include "io/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace kv {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public test::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
};

TEST_F(InputFileTest, ReadsARegularFileWhole) {
  InputFileError error;
  const auto text = read_input_file(write("a.json", "{\"format\": 1}"), 100, error);
  ASSERT_TRUE(text) << error.message;
  EXPECT_EQ(*text, "{\"format\": 1}");
}

TEST_F(InputFileTest, TheCapIsExact) {
  InputFileError error;
  EXPECT_TRUE(read_input_file(write("at.json", std::string(1000, 'x')), 1000, error));
  EXPECT_FALSE(read_input_file(write("over.json", std::string(1001, 'x')), 1000, error));
  EXPECT_EQ(error.message, "is larger than 1000 bytes");
}

TEST_F(InputFileTest, MissingFileSaysSo) {
  InputFileError error;
  EXPECT_FALSE(read_input_file((dir_ / "nope.json").string(), 100, error));
  EXPECT_EQ(error.message, "no such file");
}

TEST_F(InputFileTest, DirectoryIsRefused) {
  InputFileError error;
  EXPECT_FALSE(read_input_file(dir_.string(), 100, error));
  EXPECT_EQ(error.message, "is a directory, not a regular file");
}

TEST_F(InputFileTest, FifoIsRefusedWithoutBlocking) {
  const fs::path fifo = dir_ / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  InputFileError error;
  EXPECT_FALSE(read_input_file(fifo.string(), 100, error));  // no writer: would block forever
  EXPECT_EQ(error.message, "is a FIFO (named pipe), not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(InputFileTest, SymlinkToADeviceIsRefused) {
  const fs::path link = dir_ / "zero.json";
  fs::create_symlink("/dev/zero", link);
  InputFileError error;
  EXPECT_FALSE(read_input_file(link.string(), 4u << 20, error));
  EXPECT_EQ(error.message, "is a character device, not a regular file");
}

TEST_F(InputFileTest, SymlinkToARegularFileIsFollowed) {
  const std::string target = write("real.json", "{}");
  fs::create_symlink(target, dir_ / "link.json");
  InputFileError error;
  const auto text = read_input_file((dir_ / "link.json").string(), 100, error);
  ASSERT_TRUE(text) << error.message;
  EXPECT_EQ(*text, "{}");
}

}  // namespace
}  // namespace kv
