// ref_kernels.h — the GPU reference's float64 kernels (ref_kernels.cu), one launcher each.
//
// Written for this reference alone: no op of kernels/host or kernels/cuda is called, so a bug in
// an engine kernel cannot hide here. They share with the engine only the model's definition
// (kernels/model_math.cuh) and the storage dtypes' rounding (kernels/dtype.cuh), as the CPU
// reference does. The file is compiled with -fmad=false: each product and sum is rounded on its
// own, in the CPU reference's order wherever one thread owns a sum (projections, norms, the
// recurrent state), so those values agree with the CPU's bit for bit; only the softmax (split
// over threads) and exp/sin/pow (CUDA's libdevice, not glibc) differ, by a few ulps.
//
// A batch is a list of Rows (one position of one request); a request's history lives in its
// slot (reference/cuda_layout.h), reached through a table of slot base pointers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.cuh"

namespace kv::refgpu {

struct Row {
  int32_t slot = 0, pos = 0, token = 0;
  int32_t hinted = 0;  // the engine's fp8 row of this position is in the hint buffer
};

// A run of consecutive batch rows of one request, in position order (the recurrent layers).
struct Segment {
  int32_t slot = 0, row0 = 0, count = 0;
};

// Consecutive batch rows of one request at consecutive positions: the query rows one attention
// block takes together, so that each K/V row is read once for all of them.
struct QueryGroup {
  int32_t row0 = 0, count = 0;
};

// A range of 32-bit words to hash (protection of the reference's memory).
struct HashRange {
  const uint32_t* words = nullptr;
  int64_t begin = 0, end = 0;
};

// Softmax attention of every (row, q head) over the positions [0, pos] of the row's slot,
// in ref_math.h's form (v_a + sum p_t (v_t - v_a) / sum p_t around the first largest score).
struct AttendArgs {
  const Row* rows = nullptr;
  int32_t num_rows = 0;
  char* const* slots = nullptr;
  int64_t k_off = 0, v_off = 0, k2_off = 0;  // byte offsets of K, V and the rope keys in a slot
  int64_t k_row = 0, k_head = 0;   // K elements between positions / between K heads
  int64_t v_row = 0, v_head = 0;
  int64_t k2_row = 0;              // rope keys (float, one row per position shared by heads)
  int32_t k2_dim = 0;              // 0: none (attention layers)
  int32_t num_heads = 0, group = 1, dim = 0;
  const double* q = nullptr;       // [row][q_row]: head h at h * dim
  int64_t q_row = 0;
  const double* q2 = nullptr;      // [row][q2_row]: head h at h * k2_dim
  int64_t q2_row = 0;
  double scale = 0.0;
  double* out = nullptr;           // [row][out_row]: head h at h * dim
  int64_t out_row = 0;
  const QueryGroup* groups = nullptr;  // the batch's rows in groups of at most query_tile
  int32_t num_groups = 0;
  int32_t max_group_rows = 0;          // the largest group's count
  // Where the grouped kernel may keep the partial states of a context split in several
  // (doubles); none: never split. The launcher sets the split fields.
  double* partials = nullptr;
  int64_t partial_capacity = 0;
  int32_t split_count = 1, split_len = 0, split_pairs = 0;
};

// Query rows per group that the grouped attention kernel takes for this shape (0: it cannot).
int32_t attend_query_tile(const AttendArgs& a);

// y[n][r] = (bias[r]) + sum_c w[r][c] x[n][c], or y[n][r] += that without bias (accumulate).
void matmul(cudaStream_t st, int32_t n, const double* x, int64_t cols, const float* w,
            const float* bias, int64_t rows, double* y, bool accumulate);
// h[n][i] = embed[token][i] + position_code(pos, i).
void embed(cudaStream_t st, const Row* rows, int32_t n, const float* embed, int32_t hidden,
           double* h);
// x[n] = rms_norm(h[n]).
void rms_norm(cudaStream_t st, int32_t n, const double* h, int32_t hidden, double* x);
// dst(slot, pos)[i] = round_through_scaled(float(src[n][i]), dtype, scale): what the cache holds.
void store_rounded(cudaStream_t st, const Row* rows, int32_t n, char* const* slots,
                   int64_t dst_off, int64_t dst_row, const double* src, int64_t src_row,
                   int32_t width, DType dtype, float scale);
// dst(slot, pos)[i] = src[n][i] (doubles).
void store_rows(cudaStream_t st, const Row* rows, int32_t n, char* const* slots, int64_t dst_off,
                int64_t dst_row, const double* src, int64_t src_row, int32_t width);
// MLA: kc / v (slot, pos)[h][d] = Wuk_h / Wuv_h [d] . c, c the slot's rounded latent row.
void mla_expand(cudaStream_t st, const Row* rows, int32_t n, char* const* slots, int64_t lat_off,
                int32_t lat_dim, int64_t kc_off, int64_t v_off, const float* wuk, const float* wuv,
                int32_t heads, int32_t dim, int32_t rank);
// max_len: the longest row's positions (pos + 1) in the batch.
void attend_attention(cudaStream_t st, const AttendArgs& a, int32_t max_len);  // float K and V
void attend_mla(cudaStream_t st, const AttendArgs& a, int32_t max_len);  // double K/V, float rope
// Gated linear attention over each segment's rows in order, state in the slot (state_off).
void linear_attention(cudaStream_t st, const Segment* segs, int32_t num_segs, char* const* slots,
                      int64_t state_off, const double* q, const double* k, const double* v,
                      const double* gate, int32_t heads, int32_t dim, double scale, double* out);
// o_in[n][j] = quant_fp8(o[n][j]) with the engine's near-tie settled (ref_sequence.h). Where it
// adopts the engine's code, ties[n][layer] (`layers` per row) gets a hash of (element, code)
// added: zero where it adopted none, equal where two runs adopted the same codes. It says which
// rows the engine steered, and whether another engine's rows would steer them the same way
// (cuda_reference.cpp, reuse()).
void quantise(cudaStream_t st, const Row* rows, int32_t n, const double* o, int32_t width,
              const float* hints, float scale, double tie_window, double* o_in,
              unsigned long long* ties, int32_t layer, int32_t layers);
// dst[n][i] = src(slot, pos)[i] for rows (slot, pos) (doubles).
void gather_rows(cudaStream_t st, const Row* rows, int32_t n, char* const* slots,
                 int64_t src_off, int64_t src_row, int32_t width, double* dst);
// The drift of the engine's attention outputs, as the checker measures it (check/checker.cpp,
// measure_row): got [n][layers][heads * dim] floats, want the same in doubles; per row, layer and
// head, err = ||got - want|| / max(||want||, floor, 1e-30), floor = floor_fraction * ||want's
// row|| / sqrt(heads); NaN where a value of the engine's head is not finite.
void measure_rows(cudaStream_t st, int32_t n, int32_t layers, int32_t heads, int32_t dim,
                  const float* got, const double* want, double floor_fraction, double* err);
// sums[i] = sum over words w of range i of mix(index, w): order-free, so the same on any grid.
void hash_ranges(cudaStream_t st, const HashRange* ranges, int32_t n, unsigned long long* sums);

}  // namespace kv::refgpu
