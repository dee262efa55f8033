// cuda_reference_impl.h — the GPU reference's class (cuda_reference.h is its interface), shared
// by the files that implement it by concern:
//   cuda_reference.cpp  construction, the weights, epochs and the factory;
//   ref_protection.cpp  the hashes that prove the reference's memory unchanged (verify);
//   ref_history.cpp     slots: requests' histories kept across epochs, and their reuse;
//   ref_batch.cpp       a run: rows in batches through the model's layers;
//   ref_outputs.cpp     what the checks read: outputs, logits, errors measured on the device.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "reference/cuda/cuda_reference.h"
#include "reference/cuda/ref_kernels.h"
#include "reference/cuda/ref_memory.h"
#include "reference/cuda/ref_slot.h"
#include "reference/cuda_layout.h"
#include "reference/host/ref_sequence.h"
#include "util/cuda_check.h"

namespace kv::refgpu_impl {

using refgpu::Row;
using refgpu::Segment;

// How far each slot's kept rows hold the tokens its jobs ask for (reuse()), and the rows those
// are, hinted where the job's engine rows cover them.
struct ReusePlan {
  struct Reach {
    int32_t to = 0;         // reusable up to here
    bool computes = false;  // a job of this run needs positions past `to`
    int32_t need = 0;       // the positions this run's jobs reach
  };
  std::map<Slot*, Reach> slots;
  std::vector<Row> rows;
  std::vector<std::pair<size_t, int64_t>> hint_src;  // per row: job, engine row (-1: none)
};

// One batch of rows on the device (compute_batch()), and its query groups per layer kind
// (attention, mla), made once per batch.
struct BatchView {
  const std::vector<Row>* rows = nullptr;
  const Row* R = nullptr;
  int32_t n = 0;
  size_t N = 0;
  char* const* slots = nullptr;
  int32_t max_len = 0;     // the longest history a row attends to
  int32_t num_segs = 0;    // segments of consecutive rows of one request (linear layers)
  int32_t groups_made[2] = {-1, -1};
  int32_t group_rows[2] = {0, 0};
};

class CudaReference : public StepReference {
 public:
  CudaReference(const Scenario& s, const ModelWeights& w, int64_t keep_bytes);
  ~CudaReference() override {
    spdlog::debug("GPU reference: {} steps, {} rows computed, {} reused from earlier epochs; "
                  "verify {:.3f} s, slots {:.3f} s, reuse {:.3f} s, compute {:.3f} s, hash "
                  "{:.3f} s, outputs {:.3f} s; peak {} bytes",
                  steps_, rows_total_, reused_total_, t_verify_, t_slots_, t_reuse_, t_compute_,
                  t_hash_, t_out_, peak_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  const char* device() const override { return "cuda"; }
  void begin_epoch() override;
  void run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
           const std::function<void()>& interrupt) override;
  const double* attn_out(size_t job, int32_t pos, int32_t layer) const override;
  std::vector<double> logits(size_t job) const override;
  void release(int32_t request) override;
  size_t live() const override { return slot_of_.size(); }
  // Each run's fixed cost (verification, launches, synchronisations, the read-back) is about a
  // small step's compute: judge several small steps per run.
  int32_t steps_per_run() const override { return 16; }
  bool measure_on_device() override {
    measure_ = true;
    return true;
  }
  std::vector<double> measure(const std::function<const float*(size_t job, int32_t layer)>& got,
                              double floor_fraction) override;
  int64_t peak_device_bytes() const override { return peak_; }
  // Flips a word of the request's (live or kept) history: its first part's first position, or
  // its first snapshot of recurrent states.
  void corrupt_for_test(int32_t request, bool snapshot) {
    for (const auto& sl : slots_)
      if (sl->request == request || (sl->request < 0 && sl->owner == request)) {
        if (snapshot && sl->snapshots.empty())
          throw std::logic_error("corrupt_for_test: no snapshot");
        char* at = snapshot ? snapshot_region(*sl, 0) : sl->mem.as<char>() + parts_.front().off;
        KV_CUDA_CHECK("corrupt", cudaMemset(at, 0x5a, 4));
        return;
      }
    throw std::logic_error("corrupt_for_test: no history of that request");
  }
  CudaReferenceWork work() const { return {rows_total_, reused_total_}; }

 private:
  // Which parts verify() hashes: those read every step (of every live slot), the others (of the
  // given slots), or all of them (of the given slots).
  enum class Check { every_step, others, all };

  void upload_weights();
  // The constructor's steps: the parts of a slot the hash covers, and the batch scratch.
  void make_parts();
  void reserve_scratch();
  // The slot of `request`: its live one, or its dormant one (appended to `adopted`); nullptr if
  // it has neither.
  Slot* own_slot(int32_t request, std::vector<const Slot*>& adopted);
  // A slot for a request that has none: a new one, or another request's dormant one (evicted).
  Slot& new_slot(int32_t request);
  void reset(Slot& sl, int32_t request);
  void go_dormant(Slot& sl);
  // Checks that what the reference wrote is unchanged: the weights and the parts `which` says,
  // over [0, kept). Throws DeviceError if not.
  void verify(Check which, const std::vector<const Slot*>& slots = {});
  // Sets the recurrent states of each slot to snapshot k's (-1: zero), checking the snapshot.
  void restore_states(const std::vector<std::pair<Slot*, int32_t>>& restores);
  // Snapshot k of a slot's recurrent states (layout_.snapshots): every linear layer's state, in
  // layer order.
  char* snapshot_region(const Slot& sl, size_t k) const {
    return sl.mem.as<char>() + layout_.snapshots + static_cast<int64_t>(k) * layout_.snapshot_bytes;
  }
  // Moves each job's slot forward over its kept rows as far as a fresh computation would give
  // the same rows, and drops the kept rows past that where the slot computes in this run. The
  // slots it looked at go to `examined` (their outputs and tie records were read).
  void reuse(const std::vector<RefJob>& jobs, const std::vector<Slot*>& job_slot,
             const std::vector<size_t>& order, std::vector<const Slot*>& examined);
  // reuse()'s steps: how far each slot's kept rows hold its jobs' tokens; where the fp8 op's
  // near-ties or the linear layers' states stop it (restoring states; returns slot -> where its
  // computation starts, for slots that start before their reach); and moving the slots forward,
  // taking the hash of the rows they compute again off theirs.
  ReusePlan plan_reuse(const std::vector<RefJob>& jobs, const std::vector<Slot*>& job_slot,
                       const std::vector<size_t>& order) const;
  std::map<Slot*, int32_t> stop_reuse(const std::vector<RefJob>& jobs, ReusePlan& plan);
  void advance_slots(ReusePlan& plan, const std::map<Slot*, int32_t>& from_state,
                     std::vector<const Slot*>& examined);
  // run()'s steps: each job's slot (its own, a dormant history taken up again and verified, or
  // a new one); the slot table on the device; the rows of every job's new positions computed in
  // batches (filling `reread` and `touched`: slot and length before the run); and the hash of
  // what the run wrote (with snapshots of linear layers' states), then the reread slots verified.
  std::vector<Slot*> assign_slots(const std::vector<RefJob>& jobs);
  void upload_slot_table();
  void compute_jobs(const std::vector<RefJob>& jobs, const std::vector<Slot*>& job_slot,
                    const std::vector<size_t>& order, const std::function<void()>& interrupt,
                    std::vector<const Slot*>& reread,
                    std::vector<std::pair<Slot*, int32_t>>& touched);
  std::vector<Slot*> take_snapshots(const std::vector<std::pair<Slot*, int32_t>>& touched);
  void hash_written(const std::vector<std::pair<Slot*, int32_t>>& touched,
                    std::vector<const Slot*>& reread);
  // The engine's fp8 rows of a batch's hinted rows into the hint staging buffer, per quantised
  // layer: hint_src per row: (job, engine row), row -1 for none.
  void stage_hints(const std::vector<RefJob>& jobs,
                   const std::vector<std::pair<size_t, int64_t>>& hint_src);
  // Per row of `rows` (hint_src as above): would the fp8 op, given these hints and the slot's
  // kept exact outputs, adopt other engine codes than the kept rows' computation did?
  std::vector<char> ties_differ(const std::vector<RefJob>& jobs, const std::vector<Row>& rows,
                                const std::vector<std::pair<size_t, int64_t>>& hint_src);
  void compute_batch(const std::vector<Row>& rows, const std::vector<Segment>& segs);
  // compute_batch()'s steps: the batch to the device, the query groups of a layer kind, what
  // every attention call shares, and one layer of each kind.
  BatchView upload_batch(const std::vector<Row>& rows, const std::vector<Segment>& segs);
  void group_queries(BatchView& b, refgpu::AttendArgs& a, int kind);
  refgpu::AttendArgs attend_args(const BatchView& b) const;
  void attention_layer(BatchView& b, size_t l);
  void mla_layer(BatchView& b, size_t l);
  void linear_layer(const BatchView& b, size_t l);
  void write_outputs(const std::vector<RefJob>& jobs);
  void sync() { KV_CUDA_CHECK("reference synchronize", cudaStreamSynchronize(stream_)); }
  void note_held() { peak_ = std::max(peak_, held_); }
  void upload(void* dst, const void* src, size_t bytes) {
    KV_CUDA_CHECK("reference upload",
                  cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  // Sums of the hash over `ranges` (refgpu::hash_ranges), synchronously.
  std::vector<unsigned long long> hash(const std::vector<refgpu::HashRange>& ranges);

  const Scenario& s_;
  const ModelWeights& w_;
  const ModelSpec& m_;
  int64_t q_dim_, hidden_, L_, kvw_;
  RefSlotLayout layout_;
  // Linear layers (recurrent states: snapshots), and the most dormant slots kept.
  bool linear_;
  int64_t keep_slots_;
  int64_t releases_ = 0;
  bool broken_ = false;  // the last run() did not finish
  std::vector<Part> parts_;
  int32_t batch_rows_;
  int device_ = 0;  // the GPU current where it was made (the engine's)
  cudaStream_t stream_ = nullptr;
  int64_t held_ = 0, peak_ = 0;

  DevMem weights_;
  unsigned long long weights_hash_ = 0;
  std::vector<LayerDev> layers_;
  const float *embed_ = nullptr, *lm_head_ = nullptr;

  // Batch scratch.
  DevMem h_, x_, q_, q_rope_, k_, v_, gate_, o_, o_in_, hints_, rows_, segs_, slot_table_;
  DevMem partials_;  // the grouped attention's split contexts (refgpu::AttendArgs::partials)
  PinnedMem rows_host_, hints_host_, segs_host_;
  // The batch's query groups for the grouped attention kernel, per layer kind (attention, mla).
  DevMem groups_[2];
  PinnedMem groups_host_[2];
  // Per step: outputs and logits.
  DevMem out_rows_, out_dev_, logit_rows_, logits_dev_, ranges_, sums_;
  PinnedMem out_rows_host_, out_host_, logits_host_, ranges_host_, sums_host_;
  const StepQuantRows* quant_ = nullptr;
  // Where the time goes (logged at -v when the reference goes).
  int64_t steps_ = 0, rows_total_ = 0, reused_total_ = 0;
  double t_verify_ = 0, t_slots_ = 0, t_reuse_ = 0, t_compute_ = 0, t_hash_ = 0, t_out_ = 0;
  // Per batch row and layer, the codes the fp8 op adopted (refgpu::quantise), and a slot's kept
  // record of the same rows.
  DevMem ties_, kept_ties_;
  PinnedMem ties_host_;

  std::vector<std::unique_ptr<Slot>> slots_;
  std::map<int32_t, int32_t> slot_of_;  // request -> slot
  std::vector<char*> slot_bases_;
  // Of the last run(): per job, its first output row and its row of logits (-1: none), the
  // output rows in all (in out_dev_), and the rows attn_out() fetched (measuring on the device).
  std::vector<int64_t> job_out_row_, job_logits_row_;
  std::vector<int32_t> job_start_, job_end_;
  size_t n_out_ = 0;
  mutable std::map<int64_t, std::vector<double>> fetched_;
  // measure_on_device(): the engine's rows and the errors, staged.
  bool measure_ = false;
  DevMem got_dev_, err_dev_;
  PinnedMem got_host_, err_host_;
};

}  // namespace kv::refgpu_impl
