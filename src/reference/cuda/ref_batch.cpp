// ref_batch.cpp — one run of the GPU reference: each job's slot, the rows of every job's new
// positions in batches through the model's layers, and the hash of what the run wrote.
#include "reference/cuda/cuda_reference_impl.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <numeric>

#include "reference/host/ref_math.h"
#include "util/stopwatch.h"

namespace kv::refgpu_impl {

namespace {

// Jobs in the order their rows are computed: a request's rows go together, its jobs (steps) in
// order, requests in the order they first appear (the recurrence of a linear layer runs over one
// segment of consecutive rows per request and batch).
std::vector<size_t> request_order(const std::vector<RefJob>& jobs) {
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::map<int32_t, size_t> first;
  for (size_t j = 0; j < jobs.size(); ++j) first.try_emplace(jobs[j].request, j);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return first.at(jobs[a].request) < first.at(jobs[b].request);
  });
  return order;
}

}  // namespace

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
  const std::vector<Slot*> job_slot = assign_slots(jobs);
  lap(t_verify_);
  upload_slot_table();
  lap(t_slots_);  // new slots: allocated and zeroed
  const std::vector<size_t> order = request_order(jobs);
  // Slots whose outputs, hidden states or tie records are read back: verified after computing.
  std::vector<const Slot*> reread;
  for (Slot* sl : job_slot) sl->overwrite = sl->length;
  reuse(jobs, job_slot, order, reread);
  lap(t_reuse_);
  std::vector<std::pair<Slot*, int32_t>> touched;  // slot, its length before this run
  compute_jobs(jobs, job_slot, order, interrupt, reread, touched);
  lap(t_compute_);
  hash_written(touched, reread);
  lap(t_hash_);
  write_outputs(jobs);
  lap(t_out_);
  broken_ = false;
}

std::vector<Slot*> CudaReference::assign_slots(const std::vector<RefJob>& jobs) {
  std::vector<Slot*> job_slot(jobs.size());
  std::vector<const Slot*> adopted;  // dormant histories taken up again
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
  return job_slot;
}

void CudaReference::upload_slot_table() {
  slot_table_.reserve(slot_bases_.size() * sizeof(char*), "the slot table", held_);
  note_held();
  upload(slot_table_.as<void>(), slot_bases_.data(), slot_bases_.size() * sizeof(char*));
  sync();  // slot_bases_ is pageable: the copy must be done before it can change
}

void CudaReference::compute_jobs(const std::vector<RefJob>& jobs,
                                 const std::vector<Slot*>& job_slot,
                                 const std::vector<size_t>& order,
                                 const std::function<void()>& interrupt,
                                 std::vector<const Slot*>& reread,
                                 std::vector<std::pair<Slot*, int32_t>>& touched) {
  // The new positions of every job, in `order` and position order, in batches of rows.
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
}

std::vector<Slot*> CudaReference::take_snapshots(
    const std::vector<std::pair<Slot*, int32_t>>& touched) {
  // With linear layers, where a chunk of several positions ended: a snapshot of the states.
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
  return snapped;
}

void CudaReference::hash_written(const std::vector<std::pair<Slot*, int32_t>>& touched,
                                 std::vector<const Slot*>& reread) {
  // Hash what the run wrote: the appended rows of each part, a recurrent state whole, and the
  // snapshots it took.
  const std::vector<Slot*> snapped = take_snapshots(touched);
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<Slot*, size_t>> where;
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
}

void CudaReference::compute_batch(const std::vector<Row>& rows, const std::vector<Segment>& segs) {
  const cudaStream_t st = stream_;
  BatchView b = upload_batch(rows, segs);
  const int32_t n = b.n, hid = static_cast<int32_t>(hidden_), qd = static_cast<int32_t>(q_dim_);
  double *h = h_.as<double>(), *x = x_.as<double>(), *o = o_.as<double>(),
         *o_in = o_in_.as<double>();
  KV_CUDA_CHECK("reference ties", cudaMemsetAsync(ties_.as<void>(), 0, b.N * L_ * 8, st));
  refgpu::embed(st, b.R, n, embed_, hid, h);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerDev& d = layers_[l];
    refgpu::rms_norm(st, n, h, hid, x);
    switch (d.kind) {
      case LayerKind::attention: attention_layer(b, l); break;
      case LayerKind::mla: mla_layer(b, l); break;
      case LayerKind::linear: linear_layer(b, l); break;
    }
    refgpu::store_rows(st, b.R, n, b.slots, layout_.out + static_cast<int64_t>(l) * q_dim_ * 8,
                       L_ * q_dim_, o, qd, qd);
    const double* o_used = o;
    if (d.quant_scale != 0.0f) {
      refgpu::quantise(st, b.R, n, o, qd, hints_.as<float>() + l * b.N * q_dim_, d.quant_scale,
                       kFp8TieWindow, o_in, ties_.as<unsigned long long>(),
                       static_cast<int32_t>(l), static_cast<int32_t>(L_));
      o_used = o_in;
    }
    refgpu::matmul(st, n, o_used, qd, d.wo, nullptr, hid, h, true);
  }
  refgpu::store_rows(st, b.R, n, b.slots, layout_.hidden, hid, h, hid, hid);
  // The codes each row adopted, bit for bit (store_rows moves 8-byte words).
  refgpu::store_rows(st, b.R, n, b.slots, layout_.ties, L_, ties_.as<double>(), L_,
                     static_cast<int32_t>(L_));
}

BatchView CudaReference::upload_batch(const std::vector<Row>& rows,
                                      const std::vector<Segment>& segs) {
  const size_t N = rows.size();
  std::memcpy(rows_host_.as<void>(), rows.data(), N * sizeof(Row));
  std::memcpy(segs_host_.as<void>(), segs.data(), segs.size() * sizeof(Segment));
  upload(rows_.as<void>(), rows_host_.as<void>(), N * sizeof(Row));
  upload(segs_.as<void>(), segs_host_.as<void>(), segs.size() * sizeof(Segment));
  upload(hints_.as<void>(), hints_host_.as<void>(), N * L_ * q_dim_ * 4);
  BatchView b;
  b.rows = &rows;
  b.R = rows_.as<Row>();
  b.n = static_cast<int32_t>(N);
  b.N = N;
  b.slots = slot_table_.as<char*>();
  b.num_segs = static_cast<int32_t>(segs.size());
  for (const Row& r : rows) b.max_len = std::max(b.max_len, r.pos + 1);
  return b;
}

void CudaReference::group_queries(BatchView& b, refgpu::AttendArgs& a, int kind) {
  // Consecutive positions of one request, at most `tile` of them, share an attention block.
  // Made once per batch and layer kind (every layer of a kind has the same shape).
  const int32_t tile = refgpu::attend_query_tile(a);
  if (tile <= 0) return;  // too wide for the grouped kernel: a block per row
  a.groups = groups_[kind].as<refgpu::QueryGroup>();
  a.partials = partials_.as<double>();
  a.partial_capacity = static_cast<int64_t>(partials_.bytes() / sizeof(double));
  if (b.groups_made[kind] < 0) {
    const std::vector<Row>& rows = *b.rows;
    auto* g = groups_host_[kind].as<refgpu::QueryGroup>();
    int32_t count = 0;
    for (int32_t i = 0; i < b.n; ++i) {
      if (count == 0 || rows[i].slot != rows[i - 1].slot || rows[i].pos != rows[i - 1].pos + 1 ||
          g[count - 1].count == tile)
        g[count++] = {i, 0};
      b.group_rows[kind] = std::max(b.group_rows[kind], ++g[count - 1].count);
    }
    upload(groups_[kind].as<void>(), g, static_cast<size_t>(count) * sizeof(refgpu::QueryGroup));
    b.groups_made[kind] = count;
  }
  a.num_groups = b.groups_made[kind];
  a.max_group_rows = b.group_rows[kind];
}

refgpu::AttendArgs CudaReference::attend_args(const BatchView& b) const {
  // What every layer's attention call shares: the batch, the queries, the outputs, one K/V head
  // row per head at `dim` apart.
  refgpu::AttendArgs a;
  a.rows = b.R;
  a.num_rows = b.n;
  a.slots = b.slots;
  a.k_head = a.v_head = m_.head_dim;
  a.num_heads = m_.num_q_heads;
  a.dim = m_.head_dim;
  a.q = q_.as<double>();
  a.q_row = q_dim_;
  a.out = o_.as<double>();
  a.out_row = q_dim_;
  return a;
}

void CudaReference::attention_layer(BatchView& b, size_t l) {
  const cudaStream_t st = stream_;
  const LayerDev& d = layers_[l];
  const RefLayerOffsets& off = layout_.layers[l];
  const int32_t n = b.n, hid = static_cast<int32_t>(hidden_), qd = static_cast<int32_t>(q_dim_);
  const int32_t KVD = m_.num_kv_heads * m_.head_dim;
  double *x = x_.as<double>(), *k = k_.as<double>(), *v = v_.as<double>();
  refgpu::matmul(st, n, x, hid, d.wq, nullptr, qd, q_.as<double>(), false);
  refgpu::matmul(st, n, x, hid, d.wk, nullptr, KVD, k, false);
  refgpu::matmul(st, n, x, hid, d.wv, d.bv, KVD, v, false);
  refgpu::store_rounded(st, b.R, n, b.slots, off.a, KVD, k, KVD, KVD, s_.cache.dtype,
                        ref::cache_scale(s_.cache, s_.cache.k_scale));
  refgpu::store_rounded(st, b.R, n, b.slots, off.b, KVD, v, KVD, KVD, s_.cache.dtype,
                        ref::cache_scale(s_.cache, s_.cache.v_scale));
  refgpu::AttendArgs a = attend_args(b);
  a.k_off = off.a;
  a.v_off = off.b;
  a.k_row = a.v_row = KVD;
  a.group = m_.num_q_heads / m_.num_kv_heads;
  a.q2 = q_.as<double>();
  a.scale = static_cast<double>(w_.softmax_scale);
  group_queries(b, a, 0);
  refgpu::attend_attention(st, a, b.max_len);
}

void CudaReference::mla_layer(BatchView& b, size_t l) {
  const cudaStream_t st = stream_;
  const LayerDev& d = layers_[l];
  const RefLayerOffsets& off = layout_.layers[l];
  const int32_t n = b.n, hid = static_cast<int32_t>(hidden_), qd = static_cast<int32_t>(q_dim_);
  const int32_t H = m_.num_q_heads, D = m_.head_dim;
  const int32_t rank = m_.kv_lora_rank, P = m_.qk_rope_dim, lat = rank + P;
  double *x = x_.as<double>(), *k = k_.as<double>();
  refgpu::matmul(st, n, x, hid, d.wdkv, d.bdkv, lat, k, false);
  refgpu::store_rounded(st, b.R, n, b.slots, off.a, lat, k, lat, lat, s_.cache.dtype,
                        ref::cache_scale(s_.cache, s_.cache.k_scale));
  refgpu::mla_expand(st, b.R, n, b.slots, off.a, lat, off.b, off.c, d.wuk, d.wuv, H, D, rank);
  refgpu::matmul(st, n, x, hid, d.wqn, nullptr, qd, q_.as<double>(), false);
  refgpu::matmul(st, n, x, hid, d.wqr, nullptr, int64_t{H} * P, q_rope_.as<double>(), false);
  refgpu::AttendArgs a = attend_args(b);
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
  group_queries(b, a, 1);
  refgpu::attend_mla(st, a, b.max_len);
}

void CudaReference::linear_layer(const BatchView& b, size_t l) {
  const cudaStream_t st = stream_;
  const LayerDev& d = layers_[l];
  const int32_t n = b.n, hid = static_cast<int32_t>(hidden_), qd = static_cast<int32_t>(q_dim_);
  const int32_t H = m_.num_q_heads, D = m_.head_dim;
  double *x = x_.as<double>(), *q = q_.as<double>(), *k = k_.as<double>(), *v = v_.as<double>();
  refgpu::matmul(st, n, x, hid, d.wq, nullptr, qd, q, false);
  refgpu::matmul(st, n, x, hid, d.wk, nullptr, qd, k, false);
  refgpu::matmul(st, n, x, hid, d.wv, nullptr, qd, v, false);
  refgpu::matmul(st, n, x, hid, d.wg, d.bg, H, gate_.as<double>(), false);
  refgpu::linear_attention(st, segs_.as<Segment>(), b.num_segs, b.slots, layout_.layers[l].a, q,
                           k, v, gate_.as<double>(), H, D, static_cast<double>(w_.softmax_scale),
                           o_.as<double>());
}

}  // namespace kv::refgpu_impl
