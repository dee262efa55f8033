// ref_outputs.cpp — what the checks read of a run: the attention outputs and logits of its
// jobs, copied back (or kept on the device and compared there: measure).
#include "reference/cuda/cuda_reference_impl.h"

#include <cstring>

#include "util/parallel_for.h"

namespace kv::refgpu_impl {

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

}  // namespace kv::refgpu_impl
