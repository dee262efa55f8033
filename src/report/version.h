// version.h — the kvcheck version string written into every result document and `--version`.
#pragma once

namespace kv {

// The build may pass -DKVCHECK_VERSION="x.y.z" (the CMake project version); the fallback keeps
// the host build self-contained.
#ifdef KVCHECK_VERSION
inline constexpr const char* kKvcheckVersion = KVCHECK_VERSION;
#else
inline constexpr const char* kKvcheckVersion = "0.1.0";
#endif

}  // namespace kv
