// reference_choice.h — where a run's float64 reference runs and in which mode: --reference-device
// (host | cuda | auto: cuda when the run is on cuda) and checks.reference "auto" (full where the
// reference is on a GPU and its memory fits there next to the engine, else sampled), resolved
// before the run allocates anything.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/harness.h"
#include "device/device.h"
#include "scenario/scenario.h"

namespace kv::cli {

// "host", "cuda", "auto", "both" (the GPU reference judges, the CPU one runs alongside on the
// same requests and the result records how closely they agreed: check/crosscheck_reference.h).
const std::vector<std::string>& reference_device_kinds();

// Resolves s.checks.reference to full or sampled and says where the reference runs. Throws
// DeviceUnavailable (exit 3) when cuda is asked for and cannot be had, MemoryRefused (exit 3)
// when a full GPU reference was asked for explicitly (checks.reference or --reference "full")
// and does not fit, or when not even the sampled one fits. `budget`: --max-memory.
ReferenceSetup choose_reference(Scenario& s, const std::string& requested, const Device& device,
                                std::optional<int64_t> budget);

}  // namespace kv::cli
