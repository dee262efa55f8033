// version.h — which kvcheck this is: written into every result document and printed by
// `--version`, so that a stored result names the build that made it (git bisect, CI history).
#pragma once

#include <string>

namespace kv {

// The version alone, for code that cannot link the generated identity (the built-in backend
// plugins name their version with it). The build passes -DKVCHECK_VERSION (the CMake project
// version); the fallback keeps a header-only use self-contained.
#ifdef KVCHECK_VERSION
inline constexpr const char* kKvcheckVersion = KVCHECK_VERSION;
#else
inline constexpr const char* kKvcheckVersion = "0.1.0";
#endif

struct BuildIdentity {
  const char* version;       // the CMake project version
  const char* commit;        // git commit of the source tree at build time; "unknown" outside git
  bool dirty;                // tracked files differed from that commit when it was built
  const char* build_type;    // CMAKE_BUILD_TYPE ("none" where unset)
  const char* cuda_version;  // the CUDA toolkit it was compiled with; "" for a host-only build
  const char* cuda_architectures;  // CMAKE_CUDA_ARCHITECTURES; "" for a host-only build
};

// Generated at every build (scripts/build-identity.cmake), not only at configure: a build after
// a commit names that commit.
const BuildIdentity& build_identity();

// One line: "kvcheck 0.1.0 (commit 1a2b3c4d5e6f, modified; Release; CUDA 13.0.48 sm 90)".
std::string describe(const BuildIdentity& id);

}  // namespace kv
