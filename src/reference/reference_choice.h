// reference_choice.h — where a run's float64 reference runs and in which mode: --reference-device
// (host | cuda | auto: cuda when the run is on cuda | both) and checks.reference "auto" (full
// where the reference is on a GPU and its memory fits there next to the engine, else sampled).
// The decision alone, from figures the caller measures (the room next to the engine); the CLI
// (cli/reference_choice.cpp) asks the machine for them and makes the reference.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "scenario/enum_names.h"
#include "scenario/scenario.h"

namespace kv {

// Where a reference runs.
enum class ReferenceDevice { host, cuda };
// What --reference-device asks: a place, "auto" (the run's device) or "both" (the GPU reference
// judges, the CPU one runs alongside on the same requests: reference/crosscheck_reference.h).
enum class ReferenceRequest { host, cuda, automatic, both };

inline constexpr std::array<EnumName<ReferenceDevice>, 2> kReferenceDeviceNames{{
    {ReferenceDevice::host, "host"},
    {ReferenceDevice::cuda, "cuda"},
}};
inline constexpr std::array<EnumName<ReferenceRequest>, 4> kReferenceRequestNames{{
    {ReferenceRequest::host, "host"},
    {ReferenceRequest::cuda, "cuda"},
    {ReferenceRequest::automatic, "auto"},
    {ReferenceRequest::both, "both"},
}};

std::string_view reference_device_name(ReferenceDevice d);  // "host" | "cuda"

// What the choice comes to. `refusal` non-empty: the reference cannot run as asked for lack of
// memory (the message says what was asked, what it needs, what is free and what to do instead).
struct ReferencePlan {
  ReferenceDevice device = ReferenceDevice::host;
  bool crosscheck = false;  // both: the CPU reference runs alongside
  std::string mode_reason;  // why checks.reference "auto" became what it is ("" otherwise)
  bool fell_back = false;   // mode_reason says the full reference did not fit: worth a warning
  std::string refusal;
  // GPU reference: bytes its slots may keep finished requests' histories in for the next epoch.
  int64_t keep_bytes = 0;
};

// Whether the reference goes to the GPU: cuda or both, or auto with the run on the GPU.
bool reference_on_gpu(ReferenceRequest requested, bool run_on_cuda);

// Resolves s.checks.reference to full or sampled and says where the reference runs.
// `run_on_cuda`: the engine's device is the GPU (what "auto" follows). `room`: the GPU bytes the
// reference may take next to the engine, asked only when the reference goes to the GPU.
ReferencePlan plan_reference(Scenario& s, ReferenceRequest requested, bool run_on_cuda,
                             const std::function<int64_t()>& room);

}  // namespace kv
