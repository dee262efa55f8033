// ref_history.cpp — requests' histories on the device (slots): live, dormant after the
// request finished and kept for the next epoch, evicted, taken up again; and reuse of kept rows
// (as far as a fresh computation would give the same rows: the fp8 op's near-ties and the linear
// layers' recurrent states decide).
#include "reference/cuda/cuda_reference_impl.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace kv::refgpu_impl {

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
  ReusePlan plan = plan_reuse(jobs, job_slot, order);
  if (plan.slots.empty()) return;
  const std::map<Slot*, int32_t> from_state = stop_reuse(jobs, plan);
  advance_slots(plan, from_state, examined);
}

ReusePlan CudaReference::plan_reuse(const std::vector<RefJob>& jobs,
                                    const std::vector<Slot*>& job_slot,
                                    const std::vector<size_t>& order) const {
  ReusePlan plan;
  for (const size_t j : order) {
    const RefJob& job = jobs[j];
    Slot& sl = *job_slot[j];
    if (sl.kept <= sl.length && !plan.slots.count(&sl)) continue;
    ReusePlan::Reach& p =
        plan.slots.try_emplace(&sl, ReusePlan::Reach{sl.length, false, 0}).first->second;
    p.need = std::max(p.need, job.end);
    if (p.to >= job.end || p.computes) continue;
    const int32_t limit = std::min(job.end, sl.kept);
    int32_t to = p.to;
    while (to < limit && job.tokens.at(static_cast<size_t>(to)) ==
                             sl.tokens[static_cast<size_t>(to)])
      ++to;
    for (int32_t pos = p.to; pos < to; ++pos) {
      const bool hinted = pos >= job.start;
      plan.rows.push_back({slot_of_.at(job.request), pos, job.tokens[static_cast<size_t>(pos)],
                           hinted ? 1 : 0});
      plan.hint_src.push_back({j, hinted ? job.first_row + (pos - job.start) : -1});
    }
    p.to = to;
    p.computes = to < job.end;
  }
  return plan;
}

std::map<Slot*, int32_t> CudaReference::stop_reuse(const std::vector<RefJob>& jobs,
                                                   ReusePlan& plan) {
  // The reference's rows depend on the engine only where the fp8 op adopted an engine's code at
  // a near-tie. A kept row is what a fresh computation gives if, with this run's engine rows
  // (none where the position is not in a job's chunk), the op on the kept exact outputs adopts
  // the same codes as the kept record says it did: reuse stops at the first row where not.
  const std::vector<char> differ = ties_differ(jobs, plan.rows, plan.hint_src);
  std::map<int32_t, int32_t> stop;  // slot -> first position that differs
  for (size_t r = 0; r < plan.rows.size(); ++r)
    if (differ[r]) stop.try_emplace(plan.rows[r].slot, plan.rows[r].pos);
  // With linear layers, continue only from a position whose recurrent states can be had: where
  // they are, a snapshot's (restored), or 0 (zeroed). The valid kept rows between there and
  // `to` are computed again (they come out the same) and the kept rows past them stay.
  std::vector<std::pair<Slot*, int32_t>> restores;  // slot, snapshot (-1: zero states)
  std::map<Slot*, int32_t> from_state;              // slot -> where its computation starts
  for (auto& [sl, p] : plan.slots) {
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
  return from_state;
}

void CudaReference::advance_slots(ReusePlan& plan, const std::map<Slot*, int32_t>& from_state,
                                  std::vector<const Slot*>& examined) {
  // Move forward over the reusable rows. Where the slot computes: drop the kept rows past `to`
  // if a job needs positions past them, and take the hash of the kept rows it overwrites or
  // drops off the slot's (hashed now, before they are overwritten).
  std::vector<refgpu::HashRange> ranges;
  std::vector<std::pair<Slot*, size_t>> where;
  for (auto& [sl, p] : plan.slots) {
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
  for (auto& [sl, p] : plan.slots) {
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

}  // namespace kv::refgpu_impl
