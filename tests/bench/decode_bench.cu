// decode_bench.cu — kvbench_decode: the CUDA paged decode against the device's own copy
// bandwidth, and `--check`, its correctness against the host op. Built by tests/bench/CMakeLists.txt
// (target kvbench_decode: a CUDA build, or -DKVCHECK_BENCH_ONLY=ON for it and its tools alone);
// run by scripts/bench-decode.sh, and `--check` by ctest (gpu-decode-check).
//
//   kvbench_decode [--json FILE] [--batches 1,16,64,128] [--contexts 1024,8192,32768]
//                  [--splits 1,2,4,...] [--only gqa|mla]
//                  [--path automatic|generic|gqa_tc|mla_tc|mla_wgmma]
//                  [--mla-block-size 64] [--mla-heads 128] [--mla-dtype bf16|fp8] [--samples 7]
//                  [--tables shuffled|sequential] [--page-layout nhd|hnd] [--quick]
//   kvbench_decode --check [--seed N] [--path P] [--verbose]   (--path: that path alone)
//
// Bench mode, in one run on one GPU: (a) a device-to-device copy (bytes read + written, median of
// 20) as the bandwidth ceiling, and a streaming read, the ceiling of read-only traffic; (b) GQA
// decode, 32 q / 8 kv heads, head_dim 128, bf16, block 16; (c) MLA decode, 128 q heads, latent
// 512 + rope 64, bf16 and fp8 — each over batch x context, with a max_splits sweep (the engine's
// split rule) and a correctness check against the generic path first. Prints a markdown table
// (last) and writes the JSON file. Exit status: 0 when every configuration ran and matched (or
// every check passed), 1 when one failed, 2 on a usage error, 77 when no GPU is visible (ctest's
// skip code: --check is the GPU test gpu-decode-check, which skips on a host-only machine).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/bench/bench_cli.h"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/decode_bench.h"

namespace kv::bench {
namespace {

struct Options {
  bool check = false, verbose = false, quick = false;
  uint64_t seed = 1;
  std::string json = "decode-bench.json";
  std::string only;  // "", "gqa" or "mla"
  std::vector<int> batches = {1, 16, 64, 128}, contexts = {1024, 8192, 32768};
  int mla_block_size = 64;
  int mla_heads = 128;  // query heads over the one latent head (scenarios/gpu/ has 64)
  std::string mla_dtype;  // "", "bf16" or "fp8": MLA cache types to run (both when empty)
  RunOptions run;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "kvbench_decode: %s\nusage: kvbench_decode [--json FILE] [--batches LIST] "
               "[--contexts LIST] [--splits LIST] [--only gqa|mla] [--path P] "
               "[--mla-block-size N] [--mla-heads N] [--mla-dtype bf16|fp8] [--samples N] "
               "[--tables shuffled|sequential] [--page-layout nhd|hnd] [--quick]\n"
               "       kvbench_decode --check "
               "[--seed N] [--path P] [--verbose]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--check") o.check = true;
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--quick") o.quick = true;
    else if (a == "--seed") o.seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--json") o.json = value();
    else if (a == "--only") o.only = value();
    else if (a == "--batches") o.batches = parse_list(value());
    else if (a == "--contexts") o.contexts = parse_list(value());
    else if (a == "--splits") o.run.splits = parse_list(value());
    else if (a == "--path") o.run.path = value();
    else if (a == "--mla-block-size") o.mla_block_size = std::atoi(value());
    else if (a == "--mla-heads") {
      o.mla_heads = std::atoi(value());
      if (o.mla_heads < 1) usage("--mla-heads takes a positive number of query heads");
    }
    else if (a == "--mla-dtype") {
      o.mla_dtype = value();
      if (o.mla_dtype != "bf16" && o.mla_dtype != "fp8") usage("--mla-dtype takes bf16 or fp8");
    }
    else if (a == "--samples") o.run.samples = std::max(1, std::atoi(value()));
    else if (a == "--page-layout") {
      const std::string t = value();
      if (t != "nhd" && t != "hnd") usage("--page-layout takes nhd or hnd");
      o.run.head_major = t == "hnd";
    } else if (a == "--tables") {
      const std::string t = value();
      if (t != "shuffled" && t != "sequential") usage("--tables takes shuffled or sequential");
      o.run.shuffled_tables = t == "shuffled";
    }
    else if (a == "--help" || a == "-h") usage("help");
    else usage(("unknown argument " + a).c_str());
  }
  if (!o.only.empty() && o.only != "gqa" && o.only != "mla") usage("--only takes gqa or mla");
  if (o.run.path != "automatic" && o.run.path != "generic" && o.run.path != "gqa_tc" &&
      o.run.path != "mla_tc" && o.run.path != "mla_wgmma")
    usage("--path takes automatic, generic, gqa_tc, mla_tc or mla_wgmma");
  if (o.quick) {  // a smoke run: small shapes, few points
    o.batches = {1, 16};
    o.contexts = {1024, 8192};
    o.run.splits = {1, 4, 16};
    o.run.samples = 3;
  }
  return o;
}

DeviceInfo device_info() {
  DeviceInfo d;
  int dev = 0;
  cudaDeviceProp p{};
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.sms = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.mem_gib = double(p.totalGlobalMem) / double(1ull << 30);
  return d;
}

// Median time (ms) of 20 runs of `op` on the default stream, after 3 warm-ups.
template <class Op>
double median_ms(Op op) {
  EventTimer t;
  for (int i = 0; i < 3; ++i) op();
  std::vector<double> s;
  for (int i = 0; i < 20; ++i) {
    t.start(nullptr);
    op();
    s.push_back(t.stop_ms(nullptr));
  }
  BENCH_CUDA(cudaGetLastError());
  return median(s);
}

// Device-to-device copy of 2 x 1 GiB (smaller when memory is short): bytes read + written over
// the median time of 20 copies after 3 warm-ups.
double copy_bandwidth_tbps() {
  size_t free_b = 0, total_b = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t bytes = std::min<size_t>(size_t(1) << 30, free_b / 4);
  DevBuf src(bytes), dst(bytes);
  fill_uniform(src.as(), bytes / 4, DType::f32, -1.0f, 1.0f, 1.0f, 7, nullptr);
  const double ms = median_ms([&] {
    BENCH_CUDA(cudaMemcpyAsync(dst.as(), src.as(), bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e12;
}

// The read ceiling: decode only reads K/V, so the copy figure (half reads, half writes) is not
// its limit. A streaming read of 2 GiB (a quarter of free memory when that is less): each thread
// keeps 4 independent 16-byte non-coherent loads in flight, grid-stride, XOR-folded into a value
// stored only if it matches a constant (so the loads stay live). Two shapes (4 and 8 CTAs of 256
// threads per SM); the faster median of 20 launches after 3 warm-ups, in bytes read per second.
__global__ void read_stream_kernel(const uint4* __restrict__ p, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                d = __ldg(p + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^
           d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = __ldg(p + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

double read_bandwidth_tbps(int sms) {
  size_t free_b = 0, total_b = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t bytes = std::min<size_t>(size_t(2) << 30, free_b / 4) & ~size_t(15);
  DevBuf src(bytes), sink(4);
  fill_uniform(src.as(), bytes / 4, DType::f32, -1.0f, 1.0f, 1.0f, 11, nullptr);
  double best = 0.0;
  for (int per_sm : {4, 8}) {
    const double ms = median_ms([&] {
      read_stream_kernel<<<unsigned(sms * per_sm), 256>>>(src.as<uint4>(), bytes / 16,
                                                          sink.as<uint32_t>());
    });
    best = std::max(best, double(bytes) / (ms * 1e-3) / 1e12);
  }
  return best;
}

std::vector<DecodeShape> shapes(const Options& o) {
  std::vector<DecodeShape> v;
  if (o.only != "mla")
    for (int b : o.batches)
      for (int ctx : o.contexts) {
        DecodeShape s;
        s.kind = "gqa";
        s.dtype = DType::bf16;
        s.batch = b, s.context = ctx;
        s.q_heads = 32, s.kv_heads = 8, s.head_dim = 128, s.v_dim = 128, s.block_size = 16;
        v.push_back(s);
      }
  if (o.only != "gqa")
    for (DType dt : {DType::bf16, DType::fp8_e4m3}) {
      if (!o.mla_dtype.empty() && o.mla_dtype != (dt == DType::bf16 ? "bf16" : "fp8")) continue;
      for (int b : o.batches)
        for (int ctx : o.contexts) {
          DecodeShape s;
          s.kind = "mla";
          s.dtype = dt;
          s.batch = b, s.context = ctx;
          s.q_heads = o.mla_heads, s.kv_heads = 1, s.head_dim = 576, s.v_dim = 512;
          s.block_size = o.mla_block_size;
          s.latent = true;
          s.kv_scale = dt == DType::fp8_e4m3 ? 1.0f / 16.0f : 1.0f;
          v.push_back(s);
        }
    }
  return v;
}

int run(const Options& o) {
  if (!gpu_visible()) {
    std::fprintf(stderr, "kvbench_decode: no CUDA GPU visible: nothing run (exit 77, skipped)\n");
    return 77;
  }
  if (o.check) return run_decode_check(o.seed, o.verbose, o.run.path) == 0 ? 0 : 1;

  DeviceInfo dev = device_info();
  dev.copy_tbps = copy_bandwidth_tbps();
  dev.read_tbps = read_bandwidth_tbps(dev.sms);
  std::printf("device: %s, %d SMs, %.0f MB L2, %.1f GiB; copy bandwidth %.3f TB/s (read + write), "
              "read %.3f TB/s\n",
              dev.name.c_str(), dev.sms, dev.l2_bytes / 1e6, dev.mem_gib, dev.copy_tbps,
              dev.read_tbps);
  std::fflush(stdout);
  std::vector<BenchResult> results;
  int failed = 0;
  for (const DecodeShape& s : shapes(o)) {
    BenchResult r = run_decode_config(s, o.run, dev.copy_tbps);
    std::printf("%-3s %-4s batch %4d ctx %6d  ", s.kind.c_str(), s.dtype == DType::bf16 ? "bf16" : "fp8",
                s.batch, s.context);
    if (!r.skipped.empty())
      std::printf("skipped: %s\n", r.skipped.c_str());
    else if (!r.error.empty())
      std::printf("FAILED: %s\n", r.error.c_str()), ++failed;
    if (r.skipped.empty() && r.best_splits > 0)
      std::printf("%s%-7s splits %3d  %9.1f us  %6.3f TB/s  %5.1f%% of copy  err %.2g  sets %d\n",
                  r.error.empty() ? "" : "    ", r.path.c_str(), r.best_splits, r.best_us, r.tbps,
                  100.0 * r.copy_fraction, r.max_err, r.input_sets);
    std::fflush(stdout);
    results.push_back(r);
  }
  write_results_json(o.json, dev, results);
  std::printf("\n%s", results_markdown(dev, results).c_str());
  std::printf("\njson: %s\n", o.json.c_str());
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kv::bench

int main(int argc, char** argv) {
  return kv::bench::run_main("kvbench_decode",
                             [&] { return kv::bench::run(kv::bench::parse(argc, argv)); });
}
