// atomic_write_test.cpp — temp + rename: content lands, old file replaced, no temp left behind.
#include "report/atomic_write.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/support/temp_dir.h"

namespace kv {
namespace {

namespace fs = std::filesystem;

class AtomicWrite : public test::TempDirTest {
 protected:
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    TempDirTest::TearDown();
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
};

TEST_F(AtomicWrite, WritesContentAndLeavesNoTempFile) {
  const fs::path file = dir_ / "result.json";
  atomic_write(file, "{\"a\": 1}\n");
  EXPECT_EQ(read(file), "{\"a\": 1}\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicWrite, ReplacesAnExistingFile) {
  const fs::path file = dir_ / "result.json";
  std::ofstream(file) << "an old and much longer content that must not survive in any part";
  atomic_write(file, "new");
  EXPECT_EQ(read(file), "new");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicWrite, WritesEmptyAndLargeContent) {
  atomic_write(dir_ / "empty", "");
  EXPECT_EQ(read(dir_ / "empty"), "");
  std::string big(3 << 20, 'x');
  atomic_write(dir_ / "big", big);
  EXPECT_EQ(fs::file_size(dir_ / "big"), big.size());
}

TEST_F(AtomicWrite, MissingFolderThrowsAndCreatesNothing) {
  EXPECT_THROW(atomic_write(dir_ / "no" / "such" / "dir" / "r.json", "x"), WriteError);
  EXPECT_EQ(entries(), 0u);
}

TEST_F(AtomicWrite, TargetIsAFolderThrowsKeepsFolderAndCleansUp) {
  fs::create_directories(dir_ / "taken");
  EXPECT_THROW(atomic_write(dir_ / "taken", "x"), WriteError);
  EXPECT_TRUE(fs::is_directory(dir_ / "taken"));
  EXPECT_EQ(entries(), 1u) << "the temporary file must be removed after a failed rename";
}

TEST_F(AtomicWrite, ReadOnlyFolderThrowsAndOldFileSurvives) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  const fs::path file = dir_ / "result.json";
  std::ofstream(file) << "old";
  fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::remove);
  EXPECT_THROW(atomic_write(file, "new"), WriteError);
  EXPECT_EQ(read(file), "old");
}

TEST_F(AtomicWrite, ErrorNamesThePath) {
  try {
    atomic_write(dir_ / "missing" / "r.json", "x");
    FAIL() << "expected WriteError";
  } catch (const WriteError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kv
