// step_reference.h — the float64 reference as the checker drives it: one step at a time.
//
// Each step, the checker hands the reference one job per checked chunk: bring the request's
// reference up to `end` positions (computing only the positions it does not have yet, in order)
// and make the outputs of positions [start, end) readable. Two implementations compute the same
// logical model (ref_sequence.h is the definition):
//   host — RefSequence per request, requests of a step in parallel on CPU threads
//          (reference/host/host_reference.h);
//   cuda — plain float64 kernels on the GPU, every request's history kept on the device
//          (reference/cuda/cuda_reference.h).
// Neither reads the paged cache or calls an op of kernels/host or kernels/cuda.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

namespace kv {

// The engine's batch-wide fp8 outputs of the step, per layer [rows][q_dim] (empty for a linear
// layer): they settle the reference's fp8 rounding ties (ref_sequence.h, QuantHint). Only read.
using StepQuantRows = std::vector<std::vector<float>>;

struct RefJob {
  int32_t request = 0;
  std::vector<int32_t> tokens;  // the request's prompt + generated tokens, at least `end` long
  int32_t start = 0;            // the chunk's first position: outputs wanted for [start, end)
  int32_t end = 0;              // positions the reference reaches
  int32_t capacity = 0;         // the most positions the request can ever reach
  int64_t first_row = 0;        // the step's row holding position `start` (the fp8 hints' row)
  bool logits = false;          // the logits at end - 1 are wanted (the chunk samples)
  // The fp8 rows `first_row` indexes: run()'s `quant` if null (a job of another step than the
  // run's others: the checker's held steps, StepReference::steps_per_run).
  const StepQuantRows* quant = nullptr;
};

// How closely two references agreed over a run (--reference-device both): the largest per-row
// relative L2 difference of their attention outputs (per token x head, with the checks' floor)
// and of their logits (per token).
struct ReferenceAgreement {
  int64_t rows = 0;         // (token, layer, head) rows compared
  double max_rel_diff = 0.0;
  int64_t logit_rows = 0;   // tokens whose logits were compared
  double max_logit_rel_diff = 0.0;
};

class StepReference {
 public:
  virtual ~StepReference() = default;
  // "host" or "cuda".
  virtual const char* device() const = 0;
  // A new epoch: no request is live any more. Each epoch is judged on its own: a reference may
  // keep finished histories only to give a later request exactly the rows a fresh computation
  // would (the GPU reference, across epochs), the host reference drops them.
  virtual void begin_epoch() = 0;
  // Brings every job's request to job.end. `interrupt` is called between units of work (a
  // position on the host, a batch of rows on the GPU) and may throw to end the run. Jobs of one
  // request come in step order; a request has at most one job per run unless steps_per_run() > 1.
  virtual void run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
                   const std::function<void()>& interrupt) = 0;
  // After run(): the attention output of `layer` at `pos` (in [start, end) of job `job`),
  // num_q_heads * head_dim values, and the logits at the job's end - 1 (job.logits only).
  virtual const double* attn_out(size_t job, int32_t pos, int32_t layer) const = 0;
  virtual std::vector<double> logits(size_t job) const = 0;
  // Asks the reference to measure the engine's rows itself (measure()); true if it will. Then
  // run() no longer brings every output row to the host, and attn_out() serves the details of a
  // failure (fetched one row at a time).
  virtual bool measure_on_device() { return false; }
  // After run(), where measure_on_device() said yes: the checks' relative L2 error (measure_row
  // in check/checker.cpp: NaN where the engine's row is not finite) of every job's rows [start,
  // end), per layer and head, laid out [row][layer][head] with job 0's rows first, each job's in
  // position order. got(job, layer): the engine's attention output of the job's `start` in
  // `layer`; its other rows follow, num_q_heads * head_dim floats apart. floor_fraction: the
  // checks' kRowNormFloor.
  virtual std::vector<double> measure(
      const std::function<const float*(size_t job, int32_t layer)>& got, double floor_fraction) {
    (void)got;
    (void)floor_fraction;
    throw std::logic_error("this reference does not measure the engine's rows");
  }
  // How many steps' jobs one run() may take at once (the checker holds up to that many small
  // steps and judges them together; the verdicts do not depend on it).
  virtual int32_t steps_per_run() const { return 1; }
  // The request finished: its history may go (or be kept, see begin_epoch).
  virtual void release(int32_t request) = 0;
  // Requests whose history is held now.
  virtual size_t live() const = 0;
  // The most device memory it has held (0 on the host).
  virtual int64_t peak_device_bytes() const { return 0; }
  // Two references run side by side: how closely they agreed so far.
  virtual std::optional<ReferenceAgreement> agreement() const { return std::nullopt; }
};

}  // namespace kv
