#include "reference/reference_choice.h"

#include <fmt/format.h>

#include <algorithm>

#include "reference/cuda_layout.h"
#include "util/format_bytes.h"

namespace kv {
namespace {

// Resolves checks.reference for a GPU reference with `room` bytes next to the engine.
void resolve_gpu_mode(Scenario& s, ReferencePlan& plan, int64_t room, bool asked_auto) {
  const std::string free_text = format_bytes(static_cast<double>(std::max<int64_t>(room, 0)));
  if (s.checks.reference != ReferenceMode::sampled) {
    const int64_t full = cuda_reference_bytes(s, ReferenceMode::full);
    if (full <= room) {
      if (asked_auto) {
        s.checks.reference = ReferenceMode::full;
        plan.mode_reason = fmt::format("the full GPU reference fits: {} of {} free next to the "
                                       "engine", format_bytes(full), format_bytes(room));
      }
      return;
    }
    if (!asked_auto) {
      plan.refusal = fmt::format(
          "{}: the full GPU reference needs ~{} of GPU memory and {} is free next to the engine "
          "(checks.reference \"full\"); use --reference auto (falls back to the sampled "
          "reference) or --reference sampled, or --reference-device host",
          s.name, format_bytes(full), free_text);
      return;
    }
    s.checks.reference = ReferenceMode::sampled;
    plan.fell_back = true;
    plan.mode_reason = fmt::format(
        "the full GPU reference needs ~{} of GPU memory, {} is free next to the engine: sampled "
        "instead",
        format_bytes(full), free_text);
  }
  const int64_t sampled = cuda_reference_bytes(s, ReferenceMode::sampled);
  if (sampled > room)
    plan.refusal = fmt::format(
        "{}: even the sampled GPU reference ({} requests) needs ~{} of GPU memory and {} is "
        "free next to the engine; lower checks.sampled_requests or use --reference-device host",
        s.name, s.checks.sampled_requests, format_bytes(sampled), free_text);
}

}  // namespace

std::string_view reference_device_name(ReferenceDevice d) {
  return name_in(kReferenceDeviceNames, d);
}

bool reference_on_gpu(ReferenceRequest requested, bool run_on_cuda) {
  return requested == ReferenceRequest::both || requested == ReferenceRequest::cuda ||
         (requested == ReferenceRequest::automatic && run_on_cuda);
}

ReferencePlan plan_reference(Scenario& s, ReferenceRequest requested, bool run_on_cuda,
                             const std::function<int64_t()>& room) {
  ReferencePlan plan;
  const bool both = requested == ReferenceRequest::both;
  const bool on_gpu = reference_on_gpu(requested, run_on_cuda);
  const bool asked_auto = s.checks.reference == ReferenceMode::automatic;
  if (both && asked_auto) {  // the CPU reference computes every checked request too
    s.checks.reference = ReferenceMode::sampled;
    plan.mode_reason = "--reference-device both: the CPU reference runs alongside the GPU's";
  }
  if (!on_gpu) {
    if (asked_auto) {
      s.checks.reference = ReferenceMode::sampled;
      plan.mode_reason = "the reference runs on the host, where a full reference of a large "
                         "workload is slow";
    }
    return plan;
  }
  plan.device = ReferenceDevice::cuda;
  plan.crosscheck = both;
  const int64_t free = room();
  resolve_gpu_mode(s, plan, free, asked_auto);
  // Half of what is left next to the engine and the reference's own slots may keep finished
  // requests' histories for the next epoch (the other half is the engine's margin: its caching
  // allocator may grow past the estimate).
  if (plan.refusal.empty())
    plan.keep_bytes =
        std::max<int64_t>(free - cuda_reference_bytes(s, s.checks.reference), 0) / 2;
  return plan;
}

}  // namespace kv
