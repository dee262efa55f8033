// backend_inputs.h — the device inputs kvbench_backend_decode gives both decodes of one grid
// point: one bf16 paged cache (random, never zero), block tables of shuffled block ids, the
// sequence lengths, q in float32 for the built-in decode and the same values in the plugin's io
// dtype (q is rounded through the io dtype first, so both sides read identical numbers), an
// output per side, and the built-in decode's split workspace. Several input sets, rotated through
// so that a timed decode does not find its K/V in L2 (tests/bench/decode_runner.cu does the same).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/op_args.cuh"
#include "kernels/paged_kv.cuh"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/decode_bench.h"

namespace kv::bench {

struct BackendInputs {
  DevBuf cache, tables, lens, q, q_io, out, out_io, pout, plse;
  PagedKv desc;
  DType io = DType::bf16;       // the plugin's q / out type
  int sets = 1, table_stride = 0, max_splits_cap = 1;
  size_t q_set = 0, out_set = 0;  // elements per set
};

// Blocks a row's table holds: ceil(context / block_size).
int table_stride_of(const DecodeShape& s);

// Device bytes of one input set (cache, q and out of both sides) for io dtype `io`.
double input_set_bytes(const DecodeShape& s, DType io);

// Allocates and fills `sets` input sets; the built-in split workspace holds max_splits_cap.
BackendInputs make_backend_inputs(const DecodeShape& s, int sets, int max_splits_cap, DType io,
                                  uint64_t seed);

// The built-in decode of set `set` (float32 q / out) with the split plan `meta`.
PagedDecodeArgs builtin_args(const DecodeShape& s, const BackendInputs& in, int set,
                             const int32_t* meta, int max_splits);
// The plugin's decode of set `set`: q / out point at the io-dtype rows (same strides).
PagedDecodeArgs plugin_args(const DecodeShape& s, const BackendInputs& in, int set);

// Fills both outputs of every set with NaN bit patterns, so that an unwritten element shows.
void poison_outputs(BackendInputs& in);

// Set 0's outputs as float32 on the host: [batch][q_heads][v_dim].
std::vector<float> builtin_out_host(const BackendInputs& in);
std::vector<float> plugin_out_host(const BackendInputs& in);

}  // namespace kv::bench
