#include "cli/reference_choice.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "check/run_cost.h"
#include "check/tolerances.h"
#include "cli/device_factory.h"
#include "cli/memory_fit.h"
#include "reference/crosscheck_reference.h"
#include "reference/host/host_reference.h"

#ifdef KVCHECK_HAVE_CUDA
#include "reference/cuda/cuda_reference.h"
#endif

namespace kv::cli {
namespace {

// Share of the GPU's free memory the engine and the reference may plan on together: the CUDA
// context, the caching allocator's rounding and the graphs take some of the rest.
constexpr double kUsableShare = 0.9;

// Device bytes the reference may take: the free memory (or --max-memory) less the engine's. The
// engine's without the op checks' buffers: beside a GPU reference they are off (check/harness.h).
int64_t room_for_reference(const Scenario& s, const Device& device,
                           std::optional<int64_t> budget) {
  Scenario without_op_checks = s;
  without_op_checks.checks.op_drift = false;
  const RunCost cost = estimate_run_cost(without_op_checks);
  std::optional<int64_t> free = device.free_bytes();
  const int64_t engine = free ? cost.device_bytes() : 0;  // the engine shares that GPU
#ifdef KVCHECK_HAVE_CUDA
  if (!free) free = cuda_reference_free_bytes();  // the run is on the host, the reference not
#endif
  int64_t room = static_cast<int64_t>(static_cast<double>(free.value_or(0)) * kUsableShare);
  if (budget) room = std::min(room, *budget - cost.total_bytes());
  return room - engine;
}

}  // namespace

ReferenceSetup choose_reference(Scenario& s, ReferenceRequest requested, const Device& device,
                                std::optional<int64_t> budget) {
  const bool run_on_cuda = device.name() == "cuda";
  if (reference_on_gpu(requested, run_on_cuda)) {
    if (!cuda_built())
      throw DeviceUnavailable("--reference-device cuda: this kvcheck was built without CUDA; use "
                              "--reference-device host");
    if (!cuda_device_available())
      throw DeviceUnavailable("--reference-device cuda: no CUDA GPU is visible; use "
                              "--reference-device host");
  }
  const ReferencePlan plan = plan_reference(
      s, requested, run_on_cuda, [&] { return room_for_reference(s, device, budget); });
  // The fallback is said first, also where the sampled reference then does not fit either.
  if (plan.fell_back) spdlog::warn("{}: {}", s.name, plan.mode_reason);
  if (!plan.refusal.empty()) throw MemoryRefused(plan.refusal);
  ReferenceSetup setup;
  setup.mode_reason = plan.mode_reason;
  if (plan.device == ReferenceDevice::host) return setup;
#ifdef KVCHECK_HAVE_CUDA
  setup.device = ReferenceDevice::cuda;
  setup.protection = kCudaReferenceProtection;
  setup.make = [both = plan.crosscheck, keep = plan.keep_bytes](
                   const Scenario& sc, const ModelWeights& w) -> std::unique_ptr<StepReference> {
    if (!both) return make_cuda_reference(sc, w, keep);
    return std::make_unique<CrosscheckReference>(
        sc.model, make_cuda_reference(sc, w, keep),
        std::make_unique<HostReference>(w, sc.cache, sc.model.num_q_heads, sc.model.head_dim),
        kRowNormFloor);
  };
#endif
  return setup;
}

}  // namespace kv::cli
