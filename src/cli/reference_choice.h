// reference_choice.h — the CLI's side of where a run's float64 reference runs
// (reference/reference_choice.h decides): it checks that a GPU reference can be had, measures the
// room next to the engine and makes the reference once the engine exists.
#pragma once

#include <optional>

#include "check/harness.h"
#include "device/device.h"
#include "reference/reference_choice.h"
#include "scenario/scenario.h"

namespace kv::cli {

// Resolves s.checks.reference to full or sampled and says where the reference runs. Throws
// DeviceUnavailable (exit 3) when cuda is asked for and cannot be had, MemoryRefused (exit 3)
// when a full GPU reference was asked for explicitly (checks.reference or --reference "full")
// and does not fit, or when not even the sampled one fits. `budget`: --max-memory.
ReferenceSetup choose_reference(Scenario& s, ReferenceRequest requested, const Device& device,
                                std::optional<int64_t> budget);

}  // namespace kv::cli
