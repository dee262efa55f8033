// paged_decode.cu — CUDA op: split-KV paged decode (flash-decoding), one query token per row.
// This file validates the descriptor, picks a decode path and launches it, then the split merge;
// the kernels are in the files of their paths (below).
//
// Reference: kernels/host/paged_decode.cpp (the spec) and the PagedDecodeArgs comments of
// kernels/op_args.cuh. Built into kv_cuda_kernels by the top-level CMakeLists (glob of
// kernels/cuda/*.cu); alone: nvcc -std=c++20 -O3 -arch=sm_90 -I. -c kernels/cuda/paged_decode.cu,
// and the same for each decode_*.cu of the paths (add -Xptxas -v to see registers / spills,
// cuobjdump --dump-sass for LDGSTS.128 and HMMA).
//
// What every path shares with the host, because it is what makes bugs visible:
//   - tiles are cache blocks: scores of entries outside [start, end) of the split are -inf by
//     selection (a NaN/Inf in K there never enters), but P·V runs over EVERY entry of every block
//     the split touches, so a stale NaN in V of the unused tail of the last block reaches the
//     output (p = 0 times NaN). That is the seed-000 mechanism: keep it;
//   - the split plan is read from device memory (split_meta), so a graph replays whatever plan the
//     persistent buffer holds. Grids are sized for the worst case (rows x heads x max_splits) and a
//     CTA past its row's split count exits at once;
//   - a row with seq_len 0 (a padded graph row) writes nothing at all: no out, no partials;
//   - each split leaves a state (output normalised by its own sum, natural-log lse) in the
//     workspace and a merge kernel combines the splits of a row. A row with exactly one split is
//     written straight to `out` as merge_weights(empty, state) would (the host's merge of one
//     split), so the merge kernel skips it and is not launched at all when max_splits is 1;
//   - plans the host rejects with an exception (more splits than the workspace, chunk <= 0) cannot
//     be seen from the host here: such a row gets NaN in `out`, so a check catches it. A row with
//     seq_len > 0 and 0 splits gets zeros, as the host's empty merge writes.
//
// Four decode paths, chosen at launch from the descriptor (kv::cuda::paged_decode_path forces
// one; KVCHECK_DECODE_PATH=generic in the environment forces the simple one for a whole run,
// decode_path_env.h). The file of each says how it works and why; what they share is in
// decode_device.cuh (device code) and decode_launch.h (their launchers' host side):
//   generic  decode_generic.cu: any dtype, head_dim <= 1024, any block size, layout, GQA ratio;
//            CTA = (row, split, q head), float32 like the host, obviously right, not fast;
//   gqa_tc   decode_gqa_tc.cu: bf16, head_dim 64/128, v_dim = head_dim, up to 8 q heads per kv
//            head, power-of-two block size; mma.sync with bf16 hi + lo operands (float32-like);
//   mla_tc   decode_mla_tc.cu: MLA, head_dim 576, v_dim 512, cache.v == cache.k, bf16 or
//            fp8_e4m3; mma.sync in bf16 (fp8: f16), FlashMLA-like precision.
//   mla_wgmma decode_mla_wgmma.cu: the same descriptors as mla_tc on warpgroup MMAs (wgmma, sm_90a
//            only: compiled apart for sm_90a, and off where that image is not the one loaded);
//            FlashMLA's structure, for the matrix rate MLA decode needs.
// Then decode_merge.cu combines the splits of rows with 2 or more. The reasons for these shapes,
// and the byte/flop floors, are in results/decode-bench.md.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/decode_launch.h"  // v_dim_of
#include "kernels/cuda/decode_launchers.h"
#include "kernels/cuda/decode_path.h"
#include "kernels/cuda/decode_path_env.h"
#include "kernels/op_args.cuh"

namespace kv::cuda {

namespace {

void validate(const PagedDecodeArgs& a) {
  const PagedKv& c = a.cache;
  const int vd = decode_detail::v_dim_of(a);
  auto bad = [](const std::string& m) { throw std::invalid_argument("cuda paged_decode: " + m); };
  if (vd < 1 || vd > c.head_dim)
    bad("v_dim " + std::to_string(a.v_dim) + " is neither 0 nor in [1, head_dim " +
        std::to_string(c.head_dim) + "]");
  if (c.head_dim < 1 || c.block_size < 1 || c.num_kv_heads < 1 || a.num_q_heads < 1 ||
      a.max_splits < 1)
    bad("head_dim, block_size, num_kv_heads, num_q_heads and max_splits must be positive");
  if (a.num_q_heads % c.num_kv_heads != 0)
    bad("num_q_heads " + std::to_string(a.num_q_heads) + " is not a multiple of num_kv_heads " +
        std::to_string(c.num_kv_heads));
  if (vd > decode_detail::kMaxHeadDim)
    bad("v_dim above " + std::to_string(decode_detail::kMaxHeadDim) + " is not supported");
}

// The path KVCHECK_DECODE_PATH asks for, read once, and the error for a value it cannot take.
// Programs check the variable at start-up (decode_path_env.h); one that did not gets that error
// from paged_decode rather than a silent automatic choice.
struct EnvPath {
  DecodePath path = DecodePath::automatic;
  std::string error;
};

const EnvPath& env_path() {
  static const EnvPath e = [] {
    const char* v = std::getenv(kDecodePathEnv);
    EnvPath r;
    if (parse_decode_path_env(v) == DecodePathEnv::generic) r.path = DecodePath::generic;
    r.error = decode_path_env_error(v).value_or("");
    return r;
  }();
  return e;
}

}  // namespace

const char* decode_path_name(DecodePath p) {
  switch (p) {
    case DecodePath::automatic: return "automatic";
    case DecodePath::generic: return "generic";
    case DecodePath::gqa_tc: return "gqa_tc";
    case DecodePath::mla_tc: return "mla_tc";
    case DecodePath::mla_wgmma: return "mla_wgmma";
  }
  return "?";
}

bool decode_path_supports(const PagedDecodeArgs& a, DecodePath p, std::string* why) {
  switch (p) {
    case DecodePath::automatic:
    case DecodePath::generic: return true;
    case DecodePath::gqa_tc: return decode_detail::gqa_ok(a, why);
    case DecodePath::mla_tc: return decode_detail::mla_ok(a, why);
    case DecodePath::mla_wgmma: return decode_detail::mla_wgmma_ok(a, why);
  }
  return false;
}

DecodePath decode_path_for(const PagedDecodeArgs& a) {
  if (decode_detail::mla_wgmma_ok(a, nullptr)) return DecodePath::mla_wgmma;
  if (decode_detail::mla_ok(a, nullptr)) return DecodePath::mla_tc;
  if (decode_detail::gqa_ok(a, nullptr)) return DecodePath::gqa_tc;
  return DecodePath::generic;
}

void paged_decode_path(const PagedDecodeArgs& a, DecodePath path, cudaStream_t stream) {
  validate(a);
  if (a.num_rows <= 0) return;
  const int64_t worst = static_cast<int64_t>(a.num_rows) * a.max_splits * a.num_q_heads;
  if (worst > 0x7fffffff) throw std::invalid_argument("cuda paged_decode: grid too large");
  if (path == DecodePath::automatic) path = decode_path_for(a);
  std::string why;
  if (!decode_path_supports(a, path, &why))
    throw std::invalid_argument(std::string("cuda paged_decode: path ") + decode_path_name(path) +
                                " cannot run this descriptor: " + why);
  switch (path) {
    case DecodePath::gqa_tc: decode_detail::launch_gqa(a, stream); break;
    case DecodePath::mla_tc: decode_detail::launch_mla(a, stream); break;
    case DecodePath::mla_wgmma: decode_detail::launch_mla_wgmma(a, stream); break;
    default: decode_detail::launch_generic(a, stream); break;
  }
  decode_detail::launch_merge(a, stream);
}

void paged_decode(const PagedDecodeArgs& a, cudaStream_t stream) {
  const EnvPath& e = env_path();
  if (!e.error.empty()) throw std::invalid_argument("cuda paged_decode: " + e.error);
  paged_decode_path(a, e.path, stream);
}

}  // namespace kv::cuda
