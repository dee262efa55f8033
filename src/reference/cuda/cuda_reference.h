// cuda_reference.h — the float64 reference on the GPU (--reference-device cuda).
//
// The same logical model as the CPU reference (ref_sequence.h: contiguous per-request K/V built
// from its own projections, never the paged cache; every layer kind; the cache dtype's rounding;
// the fp8 op with the engine's near-ties settled), computed by the kernels of ref_kernels.h. Each
// checked request's history stays on the device in a slot (reference/cuda_layout.h) for as long
// as the request runs, and a step computes only its new positions: all of a step's new positions,
// across requests, go through the layers together as one batch of rows.
//
// Protection from the code under test: a backend plugin shares this process and this GPU, so an
// out-of-bounds write of one of its kernels could land in the reference's memory. Every step,
// before the reference reads anything, it hashes its weights and the written part of every
// request's history on the GPU and compares them with the hashes taken after it last wrote them;
// a difference ends the run with a DeviceError naming what changed (with a backend, the run's
// verdict is an error naming the backend's last op). New rows are hashed as they are appended.
//
// Across epochs: every epoch replays the same requests, so a finished request's history is kept
// (dormant, within keep_bytes; when a slot is needed and no more may be kept, the history that
// went dormant last is given up) and a later request with the same id takes it up again. It is
// reused only as far as a fresh computation would give the same rows: the same tokens, and the
// fp8 op adopting the same engine codes. The reference depends on the engine only where that op
// adopts the engine's code at a near-tie (ref_sequence.h), so each row records which codes it
// adopted (a hash per layer), and the new engine's rows of the reused positions go through the
// same op on the kept exact outputs: reuse stops at the first row whose record would differ.
// With linear layers, a row can be continued from only where the recurrent states are known:
// the slot keeps snapshots of them where a run computed a chunk of several positions (prefill
// chunks, steps judged together; up to kRefStateSnapshots), and reuse goes as far as the last
// snapshot (or the states' own position) it can, restoring it. A kept history is verified whole
// (its checksums) when it is taken up again, a snapshot when it is restored.
#pragma once

#include <cstdint>
#include <memory>

#include "model/model_weights.h"
#include "reference/step_reference.h"

namespace kv {

// What result.reference_protection says.
inline constexpr const char* kCudaReferenceProtection =
    "checksums: the reference's weights and every request's history are hashed on the GPU each "
    "step before use and compared with their hashes from when the reference wrote them";

// Throws DeviceError (OutOfMemory when an allocation fails) if the GPU cannot hold it.
// keep_bytes: device memory it may take, beyond the slots of the requests that run, to keep the
// histories of finished requests (below).
std::unique_ptr<StepReference> make_cuda_reference(const Scenario& s, const ModelWeights& w,
                                                   int64_t keep_bytes);

// Positions the reference computed, and positions it took from a kept history instead.
struct CudaReferenceWork {
  int64_t computed = 0, reused = 0;
};
CudaReferenceWork cuda_reference_work(const StepReference& ref);

// For the protection test only: flips one word of `request`'s history (its first part's first
// position) the way a stray write of the code under test would. The history may be live or
// kept (dormant).
void corrupt_history_for_test(StepReference& ref, int32_t request);
// The same for its first snapshot of recurrent states (a model with linear layers).
void corrupt_state_snapshot_for_test(StepReference& ref, int32_t request);

// The GPU's free memory now (cudaMemGetInfo), in bytes.
int64_t cuda_reference_free_bytes();

}  // namespace kv
