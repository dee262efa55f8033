// backend_inputs.h — the device inputs kvbench_backend_decode gives both decodes of one grid
// point: the benchmarks' decode inputs (decode_inputs.h: bf16 paged cache, shuffled block tables,
// float32 q for the built-in decode, its output and split workspace, several sets), plus q in the
// plugin's io dtype and the plugin's output. q is rounded through the io dtype first, so both
// sides read identical numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/bench/decode_inputs.h"

namespace kv::bench {

struct BackendInputs : DecodeInputs {
  DevBuf q_io, out_io;
  DType io = DType::bf16;  // the plugin's q / out type
};

// Device bytes of one input set (cache, q and out of both sides) for io dtype `io`.
double input_set_bytes(const DecodeShape& s, DType io);

// Allocates and fills `sets` input sets; the built-in split workspace holds max_splits_cap.
BackendInputs make_backend_inputs(const DecodeShape& s, int sets, int max_splits_cap, DType io,
                                  uint64_t seed);

// The plugin's decode of set `set`: q / out point at the io-dtype rows (same strides).
PagedDecodeArgs plugin_args(const DecodeShape& s, const BackendInputs& in, int set);

// Fills both outputs of every set with NaN bit patterns, so that an unwritten element shows.
void poison_outputs(BackendInputs& in);

// Set 0's outputs as float32 on the host: [batch][q_heads][v_dim].
std::vector<float> builtin_out_host(const BackendInputs& in);
std::vector<float> plugin_out_host(const BackendInputs& in);

}  // namespace kv::bench
