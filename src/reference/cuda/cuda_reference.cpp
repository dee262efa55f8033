#include "reference/cuda/cuda_reference.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/parallel_for.h"
#include "util/cuda_check.h"
#include "util/stopwatch.h"
#include "reference/cuda/ref_kernels.h"
#include "reference/cuda_layout.h"
#include "reference/host/ref_math.h"
#include "reference/host/ref_sequence.h"

namespace kv {
namespace {

using refgpu::Row;
using refgpu::Segment;

// Device memory the reference owns, freed with it.
class DevMem {
 public:
  DevMem() = default;
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  ~DevMem() { release(); }
  void release() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  // Grows to at least `bytes` (contents lost); counts what it holds in `held`. Growing again,
  // it takes twice what it had at least: cudaFree waits for the whole device (the engine's
  // step running beside the checks included), so a buffer that grows run after run (the slot
  // table, hash ranges, a step's outputs) must not free every time.
  void reserve(size_t bytes, const char* what, int64_t& held) {
    if (bytes <= bytes_) return;
    if (bytes_ > 0) bytes = std::max(bytes, 2 * bytes_);
    held -= static_cast<int64_t>(bytes_);
    release();
    const cudaError_t e = cudaMalloc(&p_, bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      p_ = nullptr;
      throw OutOfMemory(fmt::format(
          "the GPU reference could not allocate {} bytes for {} ({}): the full reference does "
          "not fit next to the engine; run with --reference auto (falls back to the sampled "
          "reference) or --reference sampled",
          bytes, what, cudaGetErrorString(e)));
    }
    bytes_ = bytes;
    held += static_cast<int64_t>(bytes);
  }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Pinned host memory for the asynchronous copies.
class PinnedMem {
 public:
  PinnedMem() = default;
  PinnedMem(const PinnedMem&) = delete;
  PinnedMem& operator=(const PinnedMem&) = delete;
  ~PinnedMem() {
    if (p_) cudaFreeHost(p_);
  }
  void reserve(size_t bytes) {  // growing again: twice what it had at least (as DevMem)
    if (bytes <= bytes_) return;
    if (bytes_ > 0) bytes = std::max(bytes, 2 * bytes_);
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
    KV_CUDA_CHECK("reference pinned buffer", cudaMallocHost(&p_, bytes));
    bytes_ = bytes;
  }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

struct LayerDev {
  LayerKind kind = LayerKind::attention;
  const float *wq = nullptr, *wk = nullptr, *wv = nullptr, *bv = nullptr, *wg = nullptr,
              *bg = nullptr, *wdkv = nullptr, *bdkv = nullptr, *wqn = nullptr, *wqr = nullptr,
              *wuk = nullptr, *wuv = nullptr, *wo = nullptr;
  float quant_scale = 0.0f;  // 0: no fp8 op (linear)
};

// A part of a slot the hash covers: rows appended per position, or a whole block (the state).
// The layers' parts are read by every step's attention and verified before every step; the
// attention outputs and final hidden states are read back only for positions a recomputed chunk
// (after a preemption) asks for again, and are verified when that happens.
struct Part {
  const char* what;
  int32_t layer;
  int64_t off, row_bytes, whole_bytes;  // whole_bytes > 0: hashed whole, else [0, kept) rows
  bool every_step = true;
};

// One request's history on the device. Live (`request` >= 0): rows [0, length) are the
// request's positions. Dormant (request -1, owner >= 0): the rows [0, kept) of a request that
// finished, or of the last epoch, kept for when the same tokens come again (every epoch replays
// the same requests): a live slot's rows [length, kept) are such rows not yet reused (reuse()).
struct Slot {
  int32_t request = -1;  // the live request; -1: none
  int32_t owner = -1;    // the request whose positions the rows hold
  int32_t length = 0;    // positions of the live request computed (or reused)
  int32_t kept = 0;      // rows written: [0, kept), length <= kept
  std::vector<int32_t> tokens;  // the tokens of [0, kept)
  // Models with linear layers: the position their recurrent states are at (`length` while the
  // slot computes; in a history taken up again, where they were left, at most `kept`), and the
  // snapshots of them (position, hash of the snapshot), one per region of the slot's snapshot
  // part, in position order.
  int32_t state_at = 0;
  std::vector<std::pair<int32_t, unsigned long long>> snapshots;
  // Kept rows [length, overwrite) that this run computes again (reuse() took their hash off).
  int32_t overwrite = 0;
  int64_t dormant_since = 0;  // when it last went dormant (a count of releases)
  DevMem mem;
  std::vector<unsigned long long> hashes;  // per Part, of what was last written ([0, kept))
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
  // The engine's fp8 rows of a batch's hinted rows into the hint staging buffer, per quantised
  // layer: hint_src per row: (job, engine row), row -1 for none.
  void stage_hints(const std::vector<RefJob>& jobs,
                   const std::vector<std::pair<size_t, int64_t>>& hint_src);
  // Per row of `rows` (hint_src as above): would the fp8 op, given these hints and the slot's
  // kept exact outputs, adopt other engine codes than the kept rows' computation did?
  std::vector<char> ties_differ(const std::vector<RefJob>& jobs, const std::vector<Row>& rows,
                                const std::vector<std::pair<size_t, int64_t>>& hint_src);
  void compute_batch(const std::vector<Row>& rows, const std::vector<Segment>& segs);
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

CudaReference::CudaReference(const Scenario& s, const ModelWeights& w, int64_t keep_bytes)
    : s_(s),
      w_(w),
      m_(w.spec),
      q_dim_(int64_t{w.spec.num_q_heads} * w.spec.head_dim),
      hidden_(w.spec.hidden_size),
      L_(static_cast<int64_t>(w.spec.layers.size())),
      kvw_(0),
      layout_(ref_slot_layout(w.spec, s.workload.prompt_len.max + s.workload.new_tokens.max)),
      linear_(std::find(w.spec.layers.begin(), w.spec.layers.end(), LayerKind::linear) !=
              w.spec.layers.end()),
      keep_slots_(std::max<int64_t>(keep_bytes, 0) / std::max<int64_t>(layout_.bytes, 1)),
      batch_rows_(ref_batch_rows(w.spec)) {
  KV_CUDA_CHECK("reference device", cudaGetDevice(&device_));
  const int64_t H = m_.num_q_heads, D = m_.head_dim;
  for (size_t l = 0; l < m_.layers.size(); ++l) {
    const RefLayerOffsets& o = layout_.layers[l];
    const int32_t li = static_cast<int32_t>(l);
    switch (m_.layers[l]) {
      case LayerKind::attention: {
        const int64_t row = int64_t{m_.num_kv_heads} * D * 4;
        parts_.push_back({"K", li, o.a, row, 0});
        parts_.push_back({"V", li, o.b, row, 0});
        kvw_ = std::max<int64_t>(kvw_, int64_t{m_.num_kv_heads} * D);
        break;
      }
      case LayerKind::mla:
        parts_.push_back({"latent", li, o.a, int64_t{m_.kv_lora_rank + m_.qk_rope_dim} * 4, 0});
        parts_.push_back({"expanded keys", li, o.b, q_dim_ * 8, 0});
        parts_.push_back({"expanded values", li, o.c, q_dim_ * 8, 0});
        kvw_ = std::max<int64_t>(kvw_, m_.kv_lora_rank + m_.qk_rope_dim);
        break;
      case LayerKind::linear:
        parts_.push_back({"recurrent state", li, o.a, 0, H * D * D * 8});
        kvw_ = std::max<int64_t>(kvw_, q_dim_);
        break;
    }
  }
  parts_.push_back({"attention outputs", -1, layout_.out, L_ * q_dim_ * 8, 0, false});
  parts_.push_back({"final hidden states", -1, layout_.hidden, hidden_ * 8, 0, false});
  parts_.push_back({"fp8 tie record", -1, layout_.ties, L_ * 8, 0, false});

  KV_CUDA_CHECK("reference stream", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  upload_weights();
  const size_t N = static_cast<size_t>(batch_rows_);
  const int64_t P = m_.qk_rope_dim;
  const bool mla = std::find(m_.layers.begin(), m_.layers.end(), LayerKind::mla) != m_.layers.end();
  h_.reserve(N * hidden_ * 8, "hidden states", held_);
  x_.reserve(N * hidden_ * 8, "normed states", held_);
  q_.reserve(N * q_dim_ * 8, "queries", held_);
  q_rope_.reserve(mla ? N * H * P * 8 : 8, "rope queries", held_);
  k_.reserve(N * kvw_ * 8, "keys", held_);
  v_.reserve(N * kvw_ * 8, "values", held_);
  gate_.reserve(N * H * 8, "gates", held_);
  o_.reserve(N * q_dim_ * 8, "outputs", held_);
  o_in_.reserve(N * q_dim_ * 8, "quantised outputs", held_);
  hints_.reserve(N * L_ * q_dim_ * 4, "the engine's fp8 rows", held_);
  ties_.reserve(N * L_ * 8, "fp8 tie records", held_);
  kept_ties_.reserve(N * L_ * 8, "fp8 tie records", held_);
  ties_host_.reserve(2 * N * L_ * 8);
  partials_.reserve(static_cast<size_t>(kRefSplitScratchBytes), "split attention states", held_);
  rows_.reserve(N * sizeof(Row), "rows", held_);
  segs_.reserve(N * sizeof(Segment), "segments", held_);
  for (int k = 0; k < 2; ++k) {
    groups_[k].reserve(N * sizeof(refgpu::QueryGroup), "query groups", held_);
    groups_host_[k].reserve(N * sizeof(refgpu::QueryGroup));
  }
  rows_host_.reserve(N * sizeof(Row));
  segs_host_.reserve(N * sizeof(Segment));
  hints_host_.reserve(N * L_ * q_dim_ * 4);
  note_held();
}

void CudaReference::upload_weights() {
  // One allocation: the weights the reference reads, 256-byte aligned, hashed as one range.
  std::vector<std::pair<const std::vector<float>*, const float**>> todo;
  layers_.resize(m_.layers.size());
  todo.push_back({&w_.embed, &embed_});
  todo.push_back({&w_.lm_head, &lm_head_});
  for (size_t l = 0; l < m_.layers.size(); ++l) {
    const LayerWeights& lw = w_.layers[l];
    LayerDev& d = layers_[l];
    d.kind = lw.kind;
    for (auto [v, p] : {std::pair{&lw.wq, &d.wq}, {&lw.wk, &d.wk}, {&lw.wv, &d.wv},
                        {&lw.bv, &d.bv}, {&lw.wg, &d.wg}, {&lw.bg, &d.bg},
                        {&lw.wdkv, &d.wdkv}, {&lw.bdkv, &d.bdkv}, {&lw.wqn, &d.wqn},
                        {&lw.wqr, &d.wqr}, {&lw.wuk, &d.wuk}, {&lw.wuv, &d.wuv},
                        {&lw.wo, &d.wo}})
      if (!v->empty()) todo.push_back({v, p});
    d.quant_scale = lw.kind == LayerKind::linear ? 0.0f : w_.quant_scale(l, s_.cache);
  }
  size_t total = 0;
  for (auto& [v, p] : todo) total += (v->size() * 4 + 255) / 256 * 256;
  weights_.reserve(total, "the model's weights", held_);
  std::vector<char> host(total, 0);
  size_t at = 0;
  for (auto& [v, p] : todo) {
    std::memcpy(host.data() + at, v->data(), v->size() * 4);
    *p = reinterpret_cast<const float*>(weights_.as<char>() + at);
    at += (v->size() * 4 + 255) / 256 * 256;
  }
  upload(weights_.as<char>(), host.data(), total);
  weights_hash_ = hash({{weights_.as<uint32_t>(), 0, static_cast<int64_t>(total / 4)}})[0];
}

std::vector<unsigned long long> CudaReference::hash(
    const std::vector<refgpu::HashRange>& ranges) {
  const size_t n = ranges.size();
  if (n == 0) return {};
  ranges_.reserve(n * sizeof(refgpu::HashRange), "hash ranges", held_);
  sums_.reserve(n * 8, "hash sums", held_);
  ranges_host_.reserve(n * sizeof(refgpu::HashRange));
  sums_host_.reserve(n * 8);
  note_held();
  std::memcpy(ranges_host_.as<void>(), ranges.data(), n * sizeof(refgpu::HashRange));
  upload(ranges_.as<void>(), ranges_host_.as<void>(), n * sizeof(refgpu::HashRange));
  refgpu::hash_ranges(stream_, ranges_.as<refgpu::HashRange>(), static_cast<int32_t>(n),
                      sums_.as<unsigned long long>());
  KV_CUDA_CHECK("reference hash", cudaMemcpyAsync(sums_host_.as<void>(), sums_.as<void>(), n * 8,
                                                  cudaMemcpyDeviceToHost, stream_));
  sync();
  const auto* s = sums_host_.as<unsigned long long>();
  return std::vector<unsigned long long>(s, s + n);
}

void CudaReference::begin_epoch() {
  for (auto& sl : slots_)
    if (sl->request >= 0) go_dormant(*sl);
  slot_of_.clear();
}

void CudaReference::release(int32_t request) {
  const auto it = slot_of_.find(request);
  if (it == slot_of_.end()) return;
  go_dormant(*slots_[static_cast<size_t>(it->second)]);
  slot_of_.erase(it);
}

void CudaReference::go_dormant(Slot& sl) {
  sl.request = -1;
  sl.dormant_since = ++releases_;
}

void CudaReference::reset(Slot& sl, int32_t request) {
  sl.request = sl.owner = request;
  sl.length = sl.kept = sl.state_at = 0;
  sl.tokens.clear();
  sl.snapshots.clear();
  // A recurrent state starts at zero; every other part is written before it is read.
  for (const Part& part : parts_)
    if (part.whole_bytes)
      KV_CUDA_CHECK("reference slot",
                    cudaMemsetAsync(sl.mem.as<char>() + part.off, 0,
                                    static_cast<size_t>(part.whole_bytes), stream_));
  sl.hashes.assign(parts_.size(), 0);
}

Slot* CudaReference::own_slot(int32_t request, std::vector<const Slot*>& adopted) {
  if (const auto it = slot_of_.find(request); it != slot_of_.end())
    return slots_[static_cast<size_t>(it->second)].get();
  // Its own dormant history (the same request in an earlier epoch): reuse() decides how much
  // of it is still valid.
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& sl = *slots_[i];
    if (sl.request >= 0 || sl.owner != request || sl.kept == 0) continue;
    sl.request = request;
    sl.length = 0;
    adopted.push_back(&sl);
    slot_of_[request] = static_cast<int32_t>(i);
    return &sl;
  }
  return nullptr;
}

Slot& CudaReference::new_slot(int32_t request) {
  // A new slot while the dormant ones stay within what may be kept, else the dormant slot that
  // went dormant last. (Every epoch replays the requests in the same order: keeping the earliest
  // finished histories serves the next epoch's first requests; evicting the oldest would evict
  // each history just before it is asked for.)
  int64_t dormant = 0, newest = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& sl = *slots_[i];
    if (sl.request >= 0) continue;
    ++dormant;
    if (newest < 0 || sl.dormant_since > slots_[static_cast<size_t>(newest)]->dormant_since)
      newest = static_cast<int64_t>(i);
  }
  size_t i = static_cast<size_t>(newest);
  if (newest < 0 || dormant < keep_slots_) {
    try {
      auto sl = std::make_unique<Slot>();
      sl->mem.reserve(static_cast<size_t>(layout_.bytes), "a request's history", held_);
      note_held();
      slots_.push_back(std::move(sl));
      slot_bases_.push_back(slots_.back()->mem.as<char>());
      i = slots_.size() - 1;
    } catch (const OutOfMemory&) {
      if (newest < 0) throw;  // a live request needs it: nothing to give up
      spdlog::debug("GPU reference: no memory for another slot, evicting a dormant history");
    }
  }
  reset(*slots_[i], request);
  slot_of_[request] = static_cast<int32_t>(i);
  return *slots_[i];
}

void CudaReference::verify(Check which, const std::vector<const Slot*>& slots) {
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<const Slot*, size_t>> what;  // per range after the first: slot, part
  ranges.push_back({weights_.as<uint32_t>(), 0, static_cast<int64_t>(weights_.bytes() / 4)});
  std::vector<const Slot*> live;
  for (const auto& sl : slots_)
    if (sl->request >= 0) live.push_back(sl.get());
  for (const Slot* sl : which == Check::every_step ? live : slots) {
    if (sl->kept == 0) continue;
    for (size_t p = 0; p < parts_.size(); ++p) {
      const Part& part = parts_[p];
      if (which != Check::all && part.every_step != (which == Check::every_step)) continue;
      const int64_t bytes = part.whole_bytes ? part.whole_bytes : sl->kept * part.row_bytes;
      ranges.push_back({reinterpret_cast<const uint32_t*>(sl->mem.as<char>() + part.off), 0,
                        bytes / 4});
      what.push_back({sl, p});
    }
  }
  const std::vector<unsigned long long> sums = hash(ranges);
  auto changed = [](const std::string& what_changed) {
    throw DeviceError(
        "the GPU reference's memory changed while the code under test ran: " + what_changed +
        " differs from what the reference wrote (its checksum no longer matches). Something on "
        "the device wrote out of bounds; with a backend, run it under compute-sanitizer, or "
        "with --reference-device host to judge it without the GPU reference");
  };
  if (sums[0] != weights_hash_) changed("the reference's copy of the model weights");
  for (size_t i = 1; i < sums.size(); ++i) {
    const auto [sl, p] = what[i - 1];
    if (sums[i] == sl->hashes[p]) continue;
    const Part& part = parts_[p];
    changed(fmt::format("request {}'s {}{} ({} positions{})", sl->request, part.what,
                        part.layer < 0 ? "" : fmt::format(" of layer {}", part.layer), sl->kept,
                        which == Check::all ? ", kept from an earlier epoch" : ""));
  }
}

void CudaReference::stage_hints(const std::vector<RefJob>& jobs,
                                const std::vector<std::pair<size_t, int64_t>>& hint_src) {
  float* hints = hints_host_.as<float>();
  const size_t N = hint_src.size();
  for (size_t l = 0; l < static_cast<size_t>(L_); ++l) {
    if (layers_[l].quant_scale == 0.0f) continue;  // a linear layer: no fp8 op
    // Consecutive rows of one job are consecutive engine rows: one copy per run of them.
    for (size_t r = 0, run = 1; r < N; r += run) {
      const auto [j, row] = hint_src[r];
      run = 1;
      if (row < 0) continue;
      const std::vector<float>& qo = (jobs[j].quant ? *jobs[j].quant : *quant_)[l];
      if (qo.empty()) {  // no engine rows of this layer: no hint (NaN is never adopted)
        std::fill_n(hints + (l * N + r) * q_dim_, q_dim_, std::numeric_limits<float>::quiet_NaN());
        continue;
      }
      while (r + run < N && hint_src[r + run].first == j &&
             hint_src[r + run].second == row + static_cast<int64_t>(run))
        ++run;
      std::memcpy(hints + (l * N + r) * q_dim_, qo.data() + static_cast<size_t>(row) * q_dim_,
                  run * q_dim_ * 4);
    }
  }
}

std::vector<char> CudaReference::ties_differ(
    const std::vector<RefJob>& jobs, const std::vector<Row>& rows,
    const std::vector<std::pair<size_t, int64_t>>& hint_src) {
  std::vector<char> differ(rows.size(), 0);
  const Row* R = rows_.as<Row>();
  for (size_t first = 0; first < rows.size(); first += static_cast<size_t>(batch_rows_)) {
    const size_t N = std::min<size_t>(batch_rows_, rows.size() - first);
    const int32_t n = static_cast<int32_t>(N), L = static_cast<int32_t>(L_);
    sync();  // the staging buffers are free again
    stage_hints(jobs, {hint_src.begin() + first, hint_src.begin() + first + N});
    std::memcpy(rows_host_.as<void>(), rows.data() + first, N * sizeof(Row));
    upload(rows_.as<void>(), rows_host_.as<void>(), N * sizeof(Row));
    upload(hints_.as<void>(), hints_host_.as<void>(), N * L_ * q_dim_ * 4);
    KV_CUDA_CHECK("reference ties", cudaMemsetAsync(ties_.as<void>(), 0, N * L_ * 8, stream_));
    for (int32_t l = 0; l < L; ++l) {
      if (layers_[l].quant_scale == 0.0f) continue;
      refgpu::gather_rows(stream_, R, n, slot_table_.as<char*>(), layout_.out + l * q_dim_ * 8,
                          L_ * q_dim_, static_cast<int32_t>(q_dim_), o_.as<double>());
      refgpu::quantise(stream_, R, n, o_.as<double>(), static_cast<int32_t>(q_dim_),
                       hints_.as<float>() + l * N * q_dim_, layers_[l].quant_scale,
                       kFp8TieWindow, o_in_.as<double>(), ties_.as<unsigned long long>(), l, L);
    }
    // The kept record, bit for bit (gather_rows moves 8-byte words).
    refgpu::gather_rows(stream_, R, n, slot_table_.as<char*>(), layout_.ties, L_, L,
                        kept_ties_.as<double>());
    auto* host = ties_host_.as<unsigned long long>();
    KV_CUDA_CHECK("reference ties", cudaMemcpyAsync(host, ties_.as<void>(), N * L_ * 8,
                                                    cudaMemcpyDeviceToHost, stream_));
    KV_CUDA_CHECK("reference ties", cudaMemcpyAsync(host + N * L_, kept_ties_.as<void>(),
                                                    N * L_ * 8, cudaMemcpyDeviceToHost, stream_));
    sync();
    for (size_t r = 0; r < N; ++r)
      differ[first + r] = std::memcmp(host + r * L_, host + (N + r) * L_, L_ * 8) != 0;
  }
  return differ;
}

void CudaReference::reuse(const std::vector<RefJob>& jobs, const std::vector<Slot*>& job_slot,
                          const std::vector<size_t>& order, std::vector<const Slot*>& examined) {
  // How far each slot's kept rows hold the tokens its jobs ask for.
  struct Plan {
    int32_t to = 0;         // reusable up to here
    bool computes = false;  // a job of this run needs positions past `to`
    int32_t need = 0;       // the positions this run's jobs reach
  };
  std::map<Slot*, Plan> plan;
  std::vector<Row> rows;  // those positions, hinted where the job's engine rows cover them
  std::vector<std::pair<size_t, int64_t>> hint_src;
  for (const size_t j : order) {
    const RefJob& job = jobs[j];
    Slot& sl = *job_slot[j];
    if (sl.kept <= sl.length && !plan.count(&sl)) continue;
    Plan& p = plan.try_emplace(&sl, Plan{sl.length, false, 0}).first->second;
    p.need = std::max(p.need, job.end);
    if (p.to >= job.end || p.computes) continue;
    const int32_t limit = std::min(job.end, sl.kept);
    int32_t to = p.to;
    while (to < limit && job.tokens.at(static_cast<size_t>(to)) ==
                             sl.tokens[static_cast<size_t>(to)])
      ++to;
    for (int32_t pos = p.to; pos < to; ++pos) {
      const bool hinted = pos >= job.start;
      rows.push_back({slot_of_.at(job.request), pos, job.tokens[static_cast<size_t>(pos)],
                      hinted ? 1 : 0});
      hint_src.push_back({j, hinted ? job.first_row + (pos - job.start) : -1});
    }
    p.to = to;
    p.computes = to < job.end;
  }
  if (plan.empty()) return;
  // The reference's rows depend on the engine only where the fp8 op adopted an engine's code at
  // a near-tie. A kept row is what a fresh computation gives if, with this run's engine rows
  // (none where the position is not in a job's chunk), the op on the kept exact outputs adopts
  // the same codes as the kept record says it did: reuse stops at the first row where not.
  const std::vector<char> differ = ties_differ(jobs, rows, hint_src);
  std::map<int32_t, int32_t> stop;  // slot -> first position that differs
  for (size_t r = 0; r < rows.size(); ++r)
    if (differ[r]) stop.try_emplace(rows[r].slot, rows[r].pos);
  // With linear layers, continue only from a position whose recurrent states can be had: where
  // they are, a snapshot's (restored), or 0 (zeroed). The valid kept rows between there and
  // `to` are computed again (they come out the same) and the kept rows past them stay.
  std::vector<std::pair<Slot*, int32_t>> restores;  // slot, snapshot (-1: zero states)
  std::map<Slot*, int32_t> from_state;              // slot -> where its computation starts
  for (auto& [sl, p] : plan) {
    if (const auto it = stop.find(slot_of_.at(sl->request)); it != stop.end()) {
      p.to = std::min(p.to, it->second);
      p.computes = true;
    }
    if (!linear_) continue;
    int32_t at = 0, from = -1;
    const bool as_they_are = sl->state_at >= sl->length && sl->state_at <= p.to;
    if (as_they_are) at = sl->state_at;
    for (size_t k = 0; k < sl->snapshots.size(); ++k) {
      const int32_t pos = sl->snapshots[k].first;
      if (pos >= sl->length && pos <= p.to && pos > at) at = pos, from = static_cast<int32_t>(k);
    }
    if (at < p.to) from_state[sl] = at;
    if (at != sl->state_at || !as_they_are) restores.push_back({sl, from});
  }
  restore_states(restores);
  // Move forward over the reusable rows. Where the slot computes: drop the kept rows past `to`
  // if a job needs positions past them, and take the hash of the kept rows it overwrites or
  // drops off the slot's (hashed now, before they are overwritten).
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<Slot*, size_t>> where;
  for (auto& [sl, p] : plan) {
    examined.push_back(sl);
    const auto it = from_state.find(sl);
    const int32_t start = it == from_state.end() ? p.to : it->second;
    if (start > sl->length) {
      reused_total_ += start - sl->length;
      sl->length = start;
    }
    const int32_t end = p.computes ? sl->kept : std::min(sl->kept, p.need);
    if (end <= sl->length) continue;
    for (size_t k = 0; k < parts_.size(); ++k) {
      const Part& part = parts_[k];
      if (part.whole_bytes) continue;
      const auto* base = reinterpret_cast<const uint32_t*>(sl->mem.as<char>() + part.off);
      ranges.push_back({base, sl->length * part.row_bytes / 4, end * part.row_bytes / 4});
      where.push_back({sl, k});
    }
  }
  const std::vector<unsigned long long> sums = hash(ranges);
  for (size_t i = 0; i < sums.size(); ++i) where[i].first->hashes[where[i].second] -= sums[i];
  for (auto& [sl, p] : plan) {
    // Rows [length, overwrite) are computed again; the kept count covers what the hash does.
    const int32_t keep_to = p.computes ? p.to : sl->kept;
    if (p.computes) {
      sl->tokens.resize(static_cast<size_t>(p.to));
      while (!sl->snapshots.empty() && sl->snapshots.back().first > p.to)
        sl->snapshots.pop_back();
    }
    sl->kept = keep_to;
    sl->overwrite = std::max(sl->length, std::min(keep_to, p.need));
  }
}

void CudaReference::restore_states(const std::vector<std::pair<Slot*, int32_t>>& restores) {
  if (restores.empty()) return;
  // The snapshots first: verified against their hashes from when they were taken.
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<Slot*, int32_t>> taken;
  for (auto [sl, k] : restores)
    if (k >= 0) {
      const char* region = snapshot_region(*sl, static_cast<size_t>(k));
      ranges.push_back({reinterpret_cast<const uint32_t*>(region), 0, layout_.snapshot_bytes / 4});
      taken.push_back({sl, k});
    }
  const std::vector<unsigned long long> sums = hash(ranges);
  for (size_t i = 0; i < sums.size(); ++i) {
    const auto [sl, k] = taken[i];
    if (sums[i] != sl->snapshots[static_cast<size_t>(k)].second)
      throw DeviceError(fmt::format(
          "the GPU reference's memory changed while the code under test ran: request {}'s "
          "snapshot of its recurrent states at position {} differs from what the reference "
          "wrote (its checksum no longer matches). Something on the device wrote out of bounds; "
          "with a backend, run it under compute-sanitizer, or with --reference-device host",
          sl->request, sl->snapshots[static_cast<size_t>(k)].first));
  }
  // Then the states, and their hashes.
  ranges.clear();
  std::vector<std::pair<Slot*, size_t>> where;
  for (auto [sl, k] : restores) {
    int64_t at = 0;  // within the snapshot: the linear layers' states in layer order
    for (size_t p = 0; p < parts_.size(); ++p) {
      const Part& part = parts_[p];
      if (!part.whole_bytes) continue;
      char* state = sl->mem.as<char>() + part.off;
      if (k < 0)
        KV_CUDA_CHECK("reference state",
                      cudaMemsetAsync(state, 0, static_cast<size_t>(part.whole_bytes), stream_));
      else
        KV_CUDA_CHECK("reference state",
                      cudaMemcpyAsync(state, snapshot_region(*sl, static_cast<size_t>(k)) + at,
                                      static_cast<size_t>(part.whole_bytes),
                                      cudaMemcpyDeviceToDevice, stream_));
      at += part.whole_bytes;
      ranges.push_back({reinterpret_cast<const uint32_t*>(state), 0, part.whole_bytes / 4});
      where.push_back({sl, p});
    }
    sl->state_at = k < 0 ? 0 : sl->snapshots[static_cast<size_t>(k)].first;
  }
  const std::vector<unsigned long long> states = hash(ranges);
  for (size_t i = 0; i < states.size(); ++i) where[i].first->hashes[where[i].second] = states[i];
}

void CudaReference::run(const std::vector<RefJob>& jobs, const StepQuantRows& quant,
                        const std::function<void()>& interrupt) {
  // A run that ended by an exception (an interrupt, a device error) may have left a slot half
  // updated (its lengths, kept rows and hashes): nothing more is computed from it.
  if (broken_)
    throw std::logic_error("GPU reference: a run after one that did not finish");
  broken_ = true;
  // The checker may call from its own thread (check_pipeline.h): use the engine's GPU there too.
  KV_CUDA_CHECK("reference device", cudaSetDevice(device_));
  quant_ = &quant;
  fetched_.clear();
  auto lap = [t = std::chrono::steady_clock::now()](double& into) mutable {
    const auto now = std::chrono::steady_clock::now();
    into += seconds_between(t, now);
    t = now;
  };
  ++steps_;
  verify(Check::every_step);
  // Slots of this step's requests, and their lengths before it (for the appended hashes).
  std::vector<Slot*> job_slot(jobs.size());
  std::vector<const Slot*> adopted;  // dormant histories taken up again
  std::vector<std::pair<Slot*, int32_t>> touched;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].capacity > layout_.capacity || jobs[j].end > layout_.capacity)
      throw std::logic_error(fmt::format("GPU reference: request {} reaches {} positions, its "
                                         "slots hold {}", jobs[j].request,
                                         std::max(jobs[j].capacity, jobs[j].end),
                                         layout_.capacity));
    job_slot[j] = own_slot(jobs[j].request, adopted);
  }
  // The others only then, so that no job evicts the kept history of a request later in the run.
  for (size_t j = 0; j < jobs.size(); ++j)
    if (!job_slot[j]) {
      job_slot[j] = own_slot(jobs[j].request, adopted);  // an earlier job's new slot
      if (!job_slot[j]) job_slot[j] = &new_slot(jobs[j].request);
    }
  // Not verified while dormant: all of it now, before anything of it is read.
  if (!adopted.empty()) verify(Check::all, adopted);
  lap(t_verify_);
  slot_table_.reserve(slot_bases_.size() * sizeof(char*), "the slot table", held_);
  note_held();
  upload(slot_table_.as<void>(), slot_bases_.data(), slot_bases_.size() * sizeof(char*));
  sync();  // slot_bases_ is pageable: the copy must be done before it can change
  lap(t_slots_);  // new slots: allocated and zeroed

  // The new positions of every job, in job order and position order, in batches of rows.
  std::vector<Row> rows;
  std::vector<Segment> segs;
  std::vector<std::pair<size_t, int64_t>> hint_src;  // per row: job, engine row (-1: none)
  auto flush = [&] {
    if (rows.empty()) return;
    if (interrupt) interrupt();
    sync();  // the pinned staging buffers are free again
    stage_hints(jobs, hint_src);
    compute_batch(rows, segs);
    rows_total_ += static_cast<int64_t>(rows.size());
    rows.clear();
    segs.clear();
    hint_src.clear();
  };
  // A request's rows go together, its jobs (steps) in order: the recurrence of a linear layer
  // runs over one segment of consecutive rows per request and batch (requests in the order they
  // first appear).
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  {
    std::map<int32_t, size_t> first;
    for (size_t j = 0; j < jobs.size(); ++j) first.try_emplace(jobs[j].request, j);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return first.at(jobs[a].request) < first.at(jobs[b].request);
    });
  }
  // Slots whose outputs, hidden states or tie records are read back: verified after computing.
  std::vector<const Slot*> reread;
  for (Slot* sl : job_slot) sl->overwrite = sl->length;
  reuse(jobs, job_slot, order, reread);
  lap(t_reuse_);
  for (const size_t j : order) {
    const RefJob& job = jobs[j];
    Slot& sl = *job_slot[j];
    if (job.start < sl.length) reread.push_back(&sl);
    if (sl.length >= job.end) continue;
    // Kept rows it overwrites must be ones reuse() took off the hash (computed again: the same).
    if (std::min(job.end, sl.kept) > std::max(sl.overwrite, sl.length) ||
        (linear_ && sl.state_at != sl.length))
      throw std::logic_error("GPU reference: kept rows or states past a position it computes");
    // A request may have several jobs (steps) in one run: hash from its length before the first.
    if (std::none_of(touched.begin(), touched.end(), [&](const auto& t) { return t.first == &sl; }))
      touched.push_back({&sl, sl.length});
    const int32_t slot = slot_of_.at(job.request);
    for (int32_t pos = sl.length; pos < job.end; ++pos) {
      if (static_cast<int32_t>(rows.size()) == batch_rows_) flush();
      const bool hinted = pos >= job.start;
      rows.push_back({slot, pos, job.tokens.at(static_cast<size_t>(pos)), hinted ? 1 : 0});
      hint_src.push_back({j, hinted ? job.first_row + (pos - job.start) : -1});
      const int32_t r = static_cast<int32_t>(rows.size()) - 1;
      if (segs.empty() || segs.back().slot != slot || segs.back().row0 + segs.back().count != r)
        segs.push_back({slot, r, 0});
      ++segs.back().count;
    }
    sl.tokens.resize(static_cast<size_t>(std::max(sl.kept, job.end)));
    std::copy(job.tokens.begin() + sl.length, job.tokens.begin() + job.end,
              sl.tokens.begin() + sl.length);
    sl.length = sl.state_at = job.end;
    sl.kept = std::max(sl.kept, job.end);
  }
  flush();
  sync();
  lap(t_compute_);

  // Hash what this step wrote: the appended rows of each part, a recurrent state whole; and
  // with linear layers, where a chunk of several positions ended, a snapshot of the states.
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<Slot*, size_t>> where;
  std::vector<Slot*> snapped;
  for (auto [sl, old_len] : touched) {
    if (!linear_ || sl->length - old_len < 2 ||
        sl->snapshots.size() >= static_cast<size_t>(kRefStateSnapshots) ||
        (!sl->snapshots.empty() && sl->snapshots.back().first >= sl->length))
      continue;
    char* region = snapshot_region(*sl, sl->snapshots.size());
    int64_t at = 0;
    for (const Part& part : parts_) {
      if (!part.whole_bytes) continue;
      KV_CUDA_CHECK("reference snapshot",
                    cudaMemcpyAsync(region + at, sl->mem.as<char>() + part.off,
                                    static_cast<size_t>(part.whole_bytes),
                                    cudaMemcpyDeviceToDevice, stream_));
      at += part.whole_bytes;
    }
    sl->snapshots.push_back({sl->length, 0});
    snapped.push_back(sl);
  }
  for (auto [sl, old_len] : touched) {
    for (size_t p = 0; p < parts_.size(); ++p) {
      const Part& part = parts_[p];
      const auto* base = reinterpret_cast<const uint32_t*>(sl->mem.as<char>() + part.off);
      if (part.whole_bytes) {
        ranges.push_back({base, 0, part.whole_bytes / 4});
      } else {
        ranges.push_back({base, old_len * part.row_bytes / 4, sl->length * part.row_bytes / 4});
      }
      where.push_back({sl, p});
    }
  }
  for (Slot* sl : snapped)
    ranges.push_back({reinterpret_cast<const uint32_t*>(
                          snapshot_region(*sl, sl->snapshots.size() - 1)),
                      0, layout_.snapshot_bytes / 4});
  const std::vector<unsigned long long> sums = hash(ranges);
  for (size_t i = 0; i < where.size(); ++i) {
    auto [sl, p] = where[i];
    if (parts_[p].whole_bytes)
      sl->hashes[p] = sums[i];
    else
      sl->hashes[p] += sums[i];
  }
  for (size_t i = 0; i < snapped.size(); ++i)
    snapped[i]->snapshots.back().second = sums[where.size() + i];
  if (!reread.empty()) {
    std::sort(reread.begin(), reread.end());
    reread.erase(std::unique(reread.begin(), reread.end()), reread.end());
    verify(Check::others, reread);
  }
  lap(t_hash_);
  write_outputs(jobs);
  lap(t_out_);
  broken_ = false;
}

void CudaReference::compute_batch(const std::vector<Row>& rows, const std::vector<Segment>& segs) {
  const cudaStream_t st = stream_;
  const int32_t n = static_cast<int32_t>(rows.size());
  const size_t N = rows.size();
  std::memcpy(rows_host_.as<void>(), rows.data(), N * sizeof(Row));
  std::memcpy(segs_host_.as<void>(), segs.data(), segs.size() * sizeof(Segment));
  upload(rows_.as<void>(), rows_host_.as<void>(), N * sizeof(Row));
  upload(segs_.as<void>(), segs_host_.as<void>(), segs.size() * sizeof(Segment));
  upload(hints_.as<void>(), hints_host_.as<void>(), N * L_ * q_dim_ * 4);
  const Row* R = rows_.as<Row>();
  char* const* slots = slot_table_.as<char*>();
  const int32_t H = m_.num_q_heads, D = m_.head_dim, KVD = m_.num_kv_heads * m_.head_dim;
  const int32_t hid = static_cast<int32_t>(hidden_), qd = static_cast<int32_t>(q_dim_);
  const int32_t rank = m_.kv_lora_rank, P = m_.qk_rope_dim, lat = rank + P;
  double *h = h_.as<double>(), *x = x_.as<double>(), *q = q_.as<double>(),
         *k = k_.as<double>(), *v = v_.as<double>(), *o = o_.as<double>(),
         *o_in = o_in_.as<double>();

  int32_t max_len = 0;
  for (const Row& r : rows) max_len = std::max(max_len, r.pos + 1);
  // Consecutive positions of one request, at most `tile` of them, share an attention block.
  // Made once per batch and layer kind (every layer of a kind has the same shape).
  int32_t groups_made[2] = {-1, -1}, group_rows[2] = {0, 0};
  auto group = [&](refgpu::AttendArgs& a, int kind) {
    const int32_t tile = refgpu::attend_query_tile(a);
    if (tile <= 0) return;  // too wide for the grouped kernel: a block per row
    a.groups = groups_[kind].as<refgpu::QueryGroup>();
    a.partials = partials_.as<double>();
    a.partial_capacity = static_cast<int64_t>(partials_.bytes() / sizeof(double));
    if (groups_made[kind] < 0) {
      auto* g = groups_host_[kind].as<refgpu::QueryGroup>();
      int32_t count = 0;
      for (int32_t i = 0; i < n; ++i) {
        if (count == 0 || rows[i].slot != rows[i - 1].slot ||
            rows[i].pos != rows[i - 1].pos + 1 || g[count - 1].count == tile)
          g[count++] = {i, 0};
        group_rows[kind] = std::max(group_rows[kind], ++g[count - 1].count);
      }
      upload(groups_[kind].as<void>(), g, static_cast<size_t>(count) * sizeof(refgpu::QueryGroup));
      groups_made[kind] = count;
    }
    a.num_groups = groups_made[kind];
    a.max_group_rows = group_rows[kind];
  };
  // What every layer's attention call shares: the batch, the queries, the outputs, one K/V head
  // row per head at `dim` apart.
  auto attend_args = [&] {
    refgpu::AttendArgs a;
    a.rows = R;
    a.num_rows = n;
    a.slots = slots;
    a.k_head = a.v_head = D;
    a.num_heads = H;
    a.dim = D;
    a.q = q;
    a.q_row = qd;
    a.out = o;
    a.out_row = qd;
    return a;
  };
  KV_CUDA_CHECK("reference ties", cudaMemsetAsync(ties_.as<void>(), 0, N * L_ * 8, st));
  refgpu::embed(st, R, n, embed_, hid, h);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerDev& d = layers_[l];
    const RefLayerOffsets& off = layout_.layers[l];
    refgpu::rms_norm(st, n, h, hid, x);
    switch (d.kind) {
      case LayerKind::attention: {
        refgpu::matmul(st, n, x, hid, d.wq, nullptr, qd, q, false);
        refgpu::matmul(st, n, x, hid, d.wk, nullptr, KVD, k, false);
        refgpu::matmul(st, n, x, hid, d.wv, d.bv, KVD, v, false);
        refgpu::store_rounded(st, R, n, slots, off.a, KVD, k, KVD, KVD, s_.cache.dtype,
                              ref::cache_scale(s_.cache, s_.cache.k_scale));
        refgpu::store_rounded(st, R, n, slots, off.b, KVD, v, KVD, KVD, s_.cache.dtype,
                              ref::cache_scale(s_.cache, s_.cache.v_scale));
        refgpu::AttendArgs a = attend_args();
        a.k_off = off.a;
        a.v_off = off.b;
        a.k_row = a.v_row = KVD;
        a.group = H / m_.num_kv_heads;
        a.q2 = q;
        a.scale = static_cast<double>(w_.softmax_scale);
        group(a, 0);
        refgpu::attend_attention(st, a, max_len);
        break;
      }
      case LayerKind::mla: {
        refgpu::matmul(st, n, x, hid, d.wdkv, d.bdkv, lat, k, false);
        refgpu::store_rounded(st, R, n, slots, off.a, lat, k, lat, lat, s_.cache.dtype,
                              ref::cache_scale(s_.cache, s_.cache.k_scale));
        refgpu::mla_expand(st, R, n, slots, off.a, lat, off.b, off.c, d.wuk, d.wuv, H, D, rank);
        refgpu::matmul(st, n, x, hid, d.wqn, nullptr, qd, q, false);
        refgpu::matmul(st, n, x, hid, d.wqr, nullptr, int64_t{H} * P, q_rope_.as<double>(),
                       false);
        refgpu::AttendArgs a = attend_args();
        a.k_off = off.b;
        a.v_off = off.c;
        a.k2_off = off.a + int64_t{rank} * 4;
        a.k_row = a.v_row = qd;
        a.k2_row = lat;
        a.k2_dim = P;
        a.group = 1;
        a.q2 = q_rope_.as<double>();
        a.q2_row = int64_t{H} * P;
        a.scale = static_cast<double>(w_.mla_softmax_scale);
        group(a, 1);
        refgpu::attend_mla(st, a, max_len);
        break;
      }
      case LayerKind::linear:
        refgpu::matmul(st, n, x, hid, d.wq, nullptr, qd, q, false);
        refgpu::matmul(st, n, x, hid, d.wk, nullptr, qd, k, false);
        refgpu::matmul(st, n, x, hid, d.wv, nullptr, qd, v, false);
        refgpu::matmul(st, n, x, hid, d.wg, d.bg, H, gate_.as<double>(), false);
        refgpu::linear_attention(st, segs_.as<Segment>(), static_cast<int32_t>(segs.size()),
                                 slots, off.a, q, k, v, gate_.as<double>(), H, D,
                                 static_cast<double>(w_.softmax_scale), o);
        break;
    }
    refgpu::store_rows(st, R, n, slots, layout_.out + static_cast<int64_t>(l) * q_dim_ * 8,
                       L_ * q_dim_, o, qd, qd);
    const double* o_used = o;
    if (d.quant_scale != 0.0f) {
      refgpu::quantise(st, R, n, o, qd, hints_.as<float>() + l * N * q_dim_, d.quant_scale,
                       kFp8TieWindow, o_in, ties_.as<unsigned long long>(),
                       static_cast<int32_t>(l), static_cast<int32_t>(L_));
      o_used = o_in;
    }
    refgpu::matmul(st, n, o_used, qd, d.wo, nullptr, hid, h, true);
  }
  refgpu::store_rows(st, R, n, slots, layout_.hidden, hid, h, hid, hid);
  // The codes each row adopted, bit for bit (store_rows moves 8-byte words).
  refgpu::store_rows(st, R, n, slots, layout_.ties, L_, ties_.as<double>(), L_,
                     static_cast<int32_t>(L_));
}

void CudaReference::write_outputs(const std::vector<RefJob>& jobs) {
  // Attention outputs of every job's [start, end), and the hidden state at end - 1 of those that
  // sample, gathered from the slots into one buffer each and copied back.
  std::vector<Row> out_rows, logit_rows;
  job_out_row_.assign(jobs.size(), 0);
  job_logits_row_.assign(jobs.size(), -1);
  job_start_.assign(jobs.size(), 0);
  job_end_.assign(jobs.size(), 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int32_t slot = slot_of_.at(jobs[j].request);
    job_out_row_[j] = static_cast<int64_t>(out_rows.size());
    job_start_[j] = jobs[j].start;
    job_end_[j] = jobs[j].end;
    for (int32_t pos = jobs[j].start; pos < jobs[j].end; ++pos)
      out_rows.push_back({slot, pos, 0, 0});
    if (jobs[j].logits) {
      job_logits_row_[j] = static_cast<int64_t>(logit_rows.size());
      logit_rows.push_back({slot, jobs[j].end - 1, 0, 0});
    }
  }
  const int64_t row_w = L_ * q_dim_;
  const size_t n_out = out_rows.size(), n_log = logit_rows.size();
  n_out_ = n_out;
  const int64_t V = m_.vocab_size;
  sync();
  out_rows_.reserve(std::max<size_t>(n_out + n_log, 1) * sizeof(Row), "output rows", held_);
  out_dev_.reserve(std::max<size_t>(n_out * row_w * 8, 8), "the step's outputs", held_);
  logits_dev_.reserve(std::max<size_t>(n_log * V * 8, 8), "logits", held_);
  note_held();
  out_rows_host_.reserve(std::max<size_t>(n_out + n_log, 1) * sizeof(Row));
  if (!measure_) out_host_.reserve(std::max<size_t>(n_out * row_w * 8, 8));
  logits_host_.reserve(std::max<size_t>(n_log * V * 8, 8));
  Row* staged = out_rows_host_.as<Row>();
  std::copy(out_rows.begin(), out_rows.end(), staged);
  std::copy(logit_rows.begin(), logit_rows.end(), staged + n_out);
  upload(out_rows_.as<void>(), staged, (n_out + n_log) * sizeof(Row));
  char* const* slots = slot_table_.as<char*>();
  refgpu::gather_rows(stream_, out_rows_.as<Row>(), static_cast<int32_t>(n_out), slots,
                      layout_.out, row_w, static_cast<int32_t>(row_w), out_dev_.as<double>());
  if (!measure_)  // else measure() compares them where they are
    KV_CUDA_CHECK("reference outputs",
                  cudaMemcpyAsync(out_host_.as<void>(), out_dev_.as<void>(), n_out * row_w * 8,
                                  cudaMemcpyDeviceToHost, stream_));
  // Logits, a batch's worth of rows at a time through the scratch of the hidden states.
  for (size_t first = 0; first < n_log; first += static_cast<size_t>(batch_rows_)) {
    const int32_t n = static_cast<int32_t>(std::min<size_t>(batch_rows_, n_log - first));
    refgpu::gather_rows(stream_, out_rows_.as<Row>() + n_out + first, n, slots, layout_.hidden,
                        hidden_, static_cast<int32_t>(hidden_), h_.as<double>());
    refgpu::rms_norm(stream_, n, h_.as<double>(), static_cast<int32_t>(hidden_), x_.as<double>());
    refgpu::matmul(stream_, n, x_.as<double>(), hidden_, lm_head_, nullptr, V,
                   logits_dev_.as<double>() + first * V, false);
  }
  KV_CUDA_CHECK("reference logits",
                cudaMemcpyAsync(logits_host_.as<void>(), logits_dev_.as<void>(), n_log * V * 8,
                                cudaMemcpyDeviceToHost, stream_));
  sync();
}

const double* CudaReference::attn_out(size_t job, int32_t pos, int32_t layer) const {
  if (pos < job_start_.at(job) || pos >= job_end_.at(job))
    throw std::logic_error("GPU reference: attn_out of a position outside its job");
  const int64_t at = (job_out_row_.at(job) + (pos - job_start_.at(job))) * L_ + layer;
  if (!measure_) return out_host_.as<double>() + at * q_dim_;
  // Measuring on the device: the row is fetched when asked for (a failure's details).
  std::vector<double>& row = fetched_[at];
  if (row.empty()) {
    row.resize(static_cast<size_t>(q_dim_));
    KV_CUDA_CHECK("reference output row",
                  cudaMemcpyAsync(row.data(), out_dev_.as<double>() + at * q_dim_, q_dim_ * 8,
                                  cudaMemcpyDeviceToHost, stream_));
    KV_CUDA_CHECK("reference output row", cudaStreamSynchronize(stream_));
  }
  return row.data();
}

std::vector<double> CudaReference::measure(
    const std::function<const float*(size_t job, int32_t layer)>& got, double floor_fraction) {
  if (!measure_) throw std::logic_error("GPU reference: measure() without measure_on_device()");
  const size_t n = n_out_, row_f = static_cast<size_t>(L_ * q_dim_);
  const int32_t H = m_.num_q_heads;
  got_dev_.reserve(std::max<size_t>(n * row_f * 4, 4), "the engine's outputs", held_);
  err_dev_.reserve(std::max<size_t>(n * L_ * H * 8, 8), "the errors", held_);
  note_held();
  got_host_.reserve(std::max<size_t>(n * row_f * 4, 4));
  err_host_.reserve(std::max<size_t>(n * L_ * H * 8, 8));
  // Staged as [row][layer][q_dim], the layout of the gathered reference outputs; a large batch
  // by a few threads, each its own jobs (the copy is most of measuring a small model's rows).
  float* g = got_host_.as<float>();
  auto stage = [&](size_t j0, size_t j1) {
    for (size_t j = j0; j < j1; ++j)
      for (int32_t l = 0; l < L_; ++l) {
        const float* src = got(j, l);
        for (int32_t i = 0; i < job_end_[j] - job_start_[j]; ++i)
          std::memcpy(g + ((job_out_row_[j] + i) * L_ + l) * q_dim_, src + i * q_dim_,
                      q_dim_ * 4);
      }
  };
  const size_t jobs = job_out_row_.size();
  const size_t parts = n * row_f < (size_t{4} << 20) ? 1 : std::min<size_t>(jobs, 8);
  parallel_for(parts, static_cast<unsigned>(parts),
               [&](size_t t) { stage(jobs * t / parts, jobs * (t + 1) / parts); });
  upload(got_dev_.as<void>(), g, n * row_f * 4);
  refgpu::measure_rows(stream_, static_cast<int32_t>(n), static_cast<int32_t>(L_), H,
                       m_.head_dim, got_dev_.as<float>(), out_dev_.as<double>(), floor_fraction,
                       err_dev_.as<double>());
  KV_CUDA_CHECK("reference errors",
                cudaMemcpyAsync(err_host_.as<void>(), err_dev_.as<void>(), n * L_ * H * 8,
                                cudaMemcpyDeviceToHost, stream_));
  sync();
  const double* e = err_host_.as<double>();
  return std::vector<double>(e, e + n * L_ * H);
}

std::vector<double> CudaReference::logits(size_t job) const {
  const int64_t row = job_logits_row_.at(job);
  if (row < 0) throw std::logic_error("GPU reference: logits of a job that does not sample");
  const double* p = logits_host_.as<double>() + row * m_.vocab_size;
  return std::vector<double>(p, p + m_.vocab_size);
}

}  // namespace

void corrupt_history_for_test(StepReference& ref, int32_t request) {
  dynamic_cast<CudaReference&>(ref).corrupt_for_test(request, false);
}

void corrupt_state_snapshot_for_test(StepReference& ref, int32_t request) {
  dynamic_cast<CudaReference&>(ref).corrupt_for_test(request, true);
}

int64_t cuda_reference_free_bytes() {
  size_t free = 0, total = 0;
  KV_CUDA_CHECK("reference memory info", cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

std::unique_ptr<StepReference> make_cuda_reference(const Scenario& s, const ModelWeights& w,
                                                   int64_t keep_bytes) {
  static_assert(kRmsNormEps == 1e-6f, "ref_kernels.cu's kRmsEps is engine/model_weights.h's");
  return std::make_unique<CudaReference>(s, w, keep_bytes);
}

CudaReferenceWork cuda_reference_work(const StepReference& ref) {
  return dynamic_cast<const CudaReference&>(ref).work();
}

}  // namespace kv
