// decode_path_env.h — KVCHECK_DECODE_PATH, the environment variable that chooses the CUDA paged
// decode's path for a whole run: unset, empty or `automatic`, the fastest path each descriptor
// allows; `generic`, the simple float32 path for every decode (decode_generic.cu). Nothing else:
// the other paths cannot run every descriptor, so they are chosen by hand only
// (kv::cuda::paged_decode_path, decode_path.h).
//
// Plain C++, no CUDA header and no library to link, so that a program built with or without the
// CUDA device checks the variable at start-up, before it runs anything: an unknown value is then
// a usage error (kvcheck: exit 2), not a device error in the middle of a run.
//
//   if (auto err = kv::cuda::decode_path_env_error()) { print *err; exit 2; }
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace kv::cuda {

inline constexpr const char* kDecodePathEnv = "KVCHECK_DECODE_PATH";

enum class DecodePathEnv { automatic, generic, invalid };

// What a value of the variable (null: unset) asks for.
inline DecodePathEnv parse_decode_path_env(const char* value) {
  const std::string_view v = value ? value : "";
  if (v.empty() || v == "automatic") return DecodePathEnv::automatic;
  if (v == "generic") return DecodePathEnv::generic;
  return DecodePathEnv::invalid;
}

// The error for a value of the variable that no run accepts, naming the accepted ones; nullopt for
// an accepted value or an unset variable.
inline std::optional<std::string> decode_path_env_error(const char* value) {
  if (parse_decode_path_env(value) != DecodePathEnv::invalid) return std::nullopt;
  return std::string(kDecodePathEnv) + "='" + value +
         "' is not a decode path: accepted values are automatic and generic (or leave it unset)";
}

// The same for the variable as the process environment holds it now.
inline std::optional<std::string> decode_path_env_error() {
  return decode_path_env_error(std::getenv(kDecodePathEnv));
}

}  // namespace kv::cuda
