#include "cli/reference_choice.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "check/crosscheck_reference.h"
#include "check/host_reference.h"
#include "check/run_cost.h"
#include "cli/device_factory.h"
#include "cli/memory_fit.h"
#include "reference/cuda_layout.h"
#include "report/format.h"

#ifdef KVCHECK_HAVE_CUDA
#include "reference/cuda/cuda_reference.h"
#endif

namespace kv::cli {
namespace {

// Share of the GPU's free memory the engine and the reference may plan on together: the CUDA
// context, the caching allocator's rounding and the graphs take some of the rest.
constexpr double kUsableShare = 0.9;

// Device bytes the reference may take: the free memory (or --max-memory) less the engine's.
int64_t room_for_reference(const Scenario& s, const Device& device,
                           std::optional<int64_t> budget) {
  const RunCost cost = estimate_run_cost(s);
  std::optional<int64_t> free = device.free_bytes();
  const int64_t engine = free ? cost.device_bytes() : 0;  // the engine shares that GPU
#ifdef KVCHECK_HAVE_CUDA
  if (!free) free = cuda_reference_free_bytes();  // the run is on the host, the reference not
#endif
  int64_t room = static_cast<int64_t>(static_cast<double>(free.value_or(0)) * kUsableShare);
  if (budget) room = std::min(room, *budget - cost.total_bytes());
  return room - engine;
}

// Resolves checks.reference for a GPU reference with `room` bytes next to the engine.
void resolve_gpu_mode(Scenario& s, ReferenceSetup& setup, int64_t room, bool asked_auto) {
  if (s.checks.reference != ReferenceMode::sampled) {
    const int64_t full = cuda_reference_bytes(s, ReferenceMode::full);
    if (full <= room) {
      if (asked_auto) {
        s.checks.reference = ReferenceMode::full;
        setup.mode_reason = fmt::format("the full GPU reference fits: {} of {} free next to the "
                                        "engine", format_bytes(full), format_bytes(room));
      }
      return;
    }
    if (!asked_auto)
      throw MemoryRefused(fmt::format(
          "{}: the full GPU reference needs ~{} of GPU memory and {} is free next to the engine "
          "(checks.reference \"full\"); use --reference auto (falls back to the sampled "
          "reference) or --reference sampled, or --reference-device host",
          s.name, format_bytes(full), format_bytes(std::max<int64_t>(room, 0))));
    s.checks.reference = ReferenceMode::sampled;
    setup.mode_reason = fmt::format(
        "the full GPU reference needs ~{} of GPU memory, {} is free next to the engine: sampled "
        "instead",
        format_bytes(full), format_bytes(std::max<int64_t>(room, 0)));
    spdlog::warn("{}: {}", s.name, setup.mode_reason);
  }
  const int64_t sampled = cuda_reference_bytes(s, ReferenceMode::sampled);
  if (sampled > room)
    throw MemoryRefused(fmt::format(
        "{}: even the sampled GPU reference ({} requests) needs ~{} of GPU memory and {} is "
        "free next to the engine; lower checks.sampled_requests or use --reference-device host",
        s.name, s.checks.sampled_requests, format_bytes(sampled),
        format_bytes(std::max<int64_t>(room, 0))));
}

}  // namespace

const std::vector<std::string>& reference_device_kinds() {
  static const std::vector<std::string> kinds = {"host", "cuda", "auto", "both"};
  return kinds;
}

ReferenceSetup choose_reference(Scenario& s, const std::string& requested, const Device& device,
                                std::optional<int64_t> budget) {
  ReferenceSetup setup;
  const bool both = requested == "both";
  const bool on_gpu =
      both || requested == "cuda" || (requested == "auto" && device.name() == "cuda");
  const bool asked_auto = s.checks.reference == ReferenceMode::automatic;
  if (both && asked_auto) {  // the CPU reference computes every checked request too
    s.checks.reference = ReferenceMode::sampled;
    setup.mode_reason = "--reference-device both: the CPU reference runs alongside the GPU's";
  }
  if (!on_gpu) {
    if (asked_auto) {
      s.checks.reference = ReferenceMode::sampled;
      setup.mode_reason = "the reference runs on the host, where a full reference of a large "
                          "workload is slow";
    }
    return setup;
  }
  if (!cuda_built())
    throw DeviceUnavailable("--reference-device cuda: this kvcheck was built without CUDA; use "
                            "--reference-device host");
  if (!cuda_device_available())
    throw DeviceUnavailable("--reference-device cuda: no CUDA GPU is visible; use "
                            "--reference-device host");
  const int64_t room = room_for_reference(s, device, budget);
  resolve_gpu_mode(s, setup, room, asked_auto);
#ifdef KVCHECK_HAVE_CUDA
  setup.device = "cuda";
  setup.protection = kCudaReferenceProtection;
  // Half of what is left next to the engine and the reference's own slots may keep finished
  // requests' histories for the next epoch (the other half is the engine's margin: its caching
  // allocator may grow past the estimate).
  const int64_t keep =
      std::max<int64_t>(room - cuda_reference_bytes(s, s.checks.reference), 0) / 2;
  setup.make = [both, keep](const Scenario& sc,
                            const ModelWeights& w) -> std::unique_ptr<StepReference> {
    if (!both) return make_cuda_reference(sc, w, keep);
    return std::make_unique<CrosscheckReference>(
        sc.model, make_cuda_reference(sc, w, keep),
        std::make_unique<HostReference>(w, sc.cache, sc.model.num_q_heads, sc.model.head_dim));
  };
#endif
  return setup;
}

}  // namespace kv::cli
