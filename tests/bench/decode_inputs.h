// decode_inputs.h — the device inputs of one decode shape, as both benchmarks lay them out
// (kvbench_decode's decode_runner.cu, kvbench_backend_decode's backend_inputs.cu): a paged cache of
// random values, never zero (NHD pages; MLA: one latent page per block, V its first v_dim
// features); block tables of shuffled block ids, as after churn; every row `context` long; q in
// float32; outputs poisoned with NaN; the built-in decode's split workspace. Several input sets,
// rotated through so that a timed decode does not find its K/V in L2. And how many sets to make,
// and the max_splits worth timing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/op_args.cuh"
#include "kernels/paged_kv.cuh"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/decode_bench.h"

namespace kv::bench {

struct DecodeInputs {
  DevBuf cache, tables, lens, q, out, pout, plse;
  PagedKv desc;
  int sets = 1, table_stride = 0, max_splits_cap = 1;
  size_t q_set = 0, out_set = 0;  // elements per set
};

// Blocks a row's table holds: ceil(context / block_size).
int table_stride_of(const DecodeShape& s);

// Bytes of a paged cache of `blocks` blocks (K and V pages; MLA: the latent page alone).
size_t cache_bytes(const DecodeShape& s, int64_t blocks);

// Allocates and fills `sets` input sets; the split workspace holds max_splits_cap. Sequential
// tables (shuffled false) give each row adjacent blocks in ascending order; head_major pages are
// [head][entry][feature] (HND) instead of NHD. An fp8 cache is scaled by s.kv_scale.
DecodeInputs make_decode_inputs(const DecodeShape& s, int sets, int max_splits_cap, uint64_t seed,
                                bool shuffled = true, bool head_major = false);

// The built-in decode of the first `rows` rows of set `set` (float32 q / out) with split plan
// `meta`.
PagedDecodeArgs decode_args(const DecodeShape& s, const DecodeInputs& in, int set,
                            const int32_t* meta, int max_splits, int rows);

// The max_splits of `wanted` worth timing: at most one split per block, and no more than 2048
// row-splits (16 CTAs per SM of an H100/H200 for GQA: past that, splitting only adds merge
// traffic); {1} when none is.
std::vector<int> splits_worth_trying(const DecodeShape& s, const std::vector<int>& wanted);

// Input sets of `set_bytes` each: enough to rotate over `rotate_bytes` (0: 8 x L2, at least
// 512 MiB), at most 64, as many as fit in 85% of free device memory after `fixed` bytes; 0 when
// not even one fits.
int input_set_count(double set_bytes, double rotate_bytes, double fixed);

}  // namespace kv::bench
