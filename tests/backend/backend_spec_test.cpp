// backend_spec_test.cpp — backend specs (backend/backend_spec.h): a plugin path passes through;
// python:MODULE resolves to the Python host with the module on the option text's first line and
// the user's options after it, which the host reads back; bad specs say what was expected.
#include "backend/backend_spec.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(BackendSpec, APluginPathPassesThrough) {
  const BackendTarget t = backend_target("build/libmine.so", "a=1");
  EXPECT_EQ(t.library, "build/libmine.so");
  EXPECT_EQ(t.options, "a=1");
  EXPECT_EQ(t.python_module, "");
  EXPECT_EQ(t.problem, "");
  EXPECT_FALSE(is_python_backend("build/libmine.so"));
  EXPECT_FALSE(is_python_backend("python"));
}

TEST(BackendSpec, PythonModuleGoesToTheHostAndBackOut) {
  setenv("KVCHECK_PYTHON_HOST", "/opt/kv/libkvcheck_backend_python.so", 1);
  const BackendTarget t = backend_target("python:pkg.decode", "prefill=fused,x=2");
  unsetenv("KVCHECK_PYTHON_HOST");
  EXPECT_EQ(t.problem, "");
  EXPECT_EQ(t.library, "/opt/kv/libkvcheck_backend_python.so");
  EXPECT_EQ(t.python_module, "pkg.decode");
  const PythonHostOptions o = python_host_options(t.options);
  EXPECT_EQ(o.problem, "");
  EXPECT_EQ(o.module, "pkg.decode");
  EXPECT_EQ(o.rest, "prefill=fused,x=2");
  EXPECT_EQ(python_host_options(backend_target("python:m", "").options).rest, "");
}

TEST(BackendSpec, BadPythonSpecsSayWhatWasExpected) {
  EXPECT_NE(backend_target("python:", "").problem.find("expected python:MODULE"),
            std::string::npos);
  EXPECT_NE(backend_target("python:a\nb", "").problem.find("expected python:MODULE"),
            std::string::npos);
  // The host loaded without python: cannot tell which module to run.
  EXPECT_NE(python_host_options("prefill=fused").problem.find("module=MODULE"), std::string::npos);
  EXPECT_NE(python_host_options("module=").problem.find("module=MODULE"), std::string::npos);
}

TEST(BackendSpec, WithoutTheHostTheMessageSaysHowToBuildIt) {
  // The test binary's folder has no backends/libkvcheck_backend_python.so beside it.
  unsetenv("KVCHECK_PYTHON_HOST");
  const BackendTarget t = backend_target("python:m", "");
  if (!t.library.empty()) GTEST_SKIP() << "a Python host lies beside the test binary";
  EXPECT_NE(t.problem.find("-DKVCHECK_PYTHON=ON"), std::string::npos) << t.problem;
}

TEST(BackendSpec, ShortStemsForResultFileNames) {
  EXPECT_EQ(backend_short_stem("/x/libkvcheck_backend_flashinfer.so"),
            "libkvcheck_backend_flashinfer.so");
  EXPECT_EQ(backend_short_stem("python:pkg.sub.decode"), "decode");
  EXPECT_EQ(backend_short_stem("python:numpy_host"), "numpy_host");
  EXPECT_EQ(backend_short_stem("python:../adapters/sdpa.py"), "sdpa");
}

TEST(BackendSpec, ScenarioRelativePaths) {
  EXPECT_EQ(backend_relative_to("lib.so", "/s/dir"), "/s/dir/lib.so");
  EXPECT_EQ(backend_relative_to("/abs/lib.so", "/s/dir"), "/abs/lib.so");
  EXPECT_EQ(backend_relative_to("python:pkg.mod", "/s/dir"), "python:pkg.mod");
  EXPECT_EQ(backend_relative_to("python:../b/mine.py", "/s/dir"), "python:/s/b/mine.py");
}

}  // namespace
}  // namespace kv
