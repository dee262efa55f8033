// backend_decode_main.cpp — kvbench_backend_decode: a backend plugin's paged_decode against
// kvcheck's built-in CUDA decode, on the same inputs, point by point over batch x context, in one
// process (tests/bench/CMakeLists.txt builds it; scripts/bench-backend-decode.sh runs it).
//
//   kvbench_backend_decode --plugin LIB.so [--plugin-option TEXT] [--out FILE.md]
//                          [--batches 1,16,64,128] [--contexts 1024,8192,32768]
//                          [--mla-heads 16,64,128] [--only gqa|mla] [--splits 1,2,4,...]
//                          [--samples 7] [--timing graph|eager] [--device N] [--quick]
//   kvbench_backend_decode --list        the grid and its K/V bytes (no GPU needed)
//   kvbench_backend_decode --self-test   the host-side helpers on known inputs (no GPU needed)
//
// The plugin is dlopen'ed, never linked. Shapes: the GQA shape of scenarios/gpu/llama-gqa-bf16.json
// and the MLA latent 512 + 64 at each --mla-heads (backend_report.cpp). Graph timing unless the
// plugin declares no graph support or --timing eager; both sides are always timed alike. Prints
// one line per point as it goes, then the markdown report (also written to --out). Exit status:
// 0 every point ran and matched (or the plugin's caps refused it), 1 a point failed (plugin error,
// mismatch, built-in failure), 2 usage, 3 the plugin did not load, 77 no GPU visible (ctest's
// skip code).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backend/abi_tensor.h"
#include "tests/bench/backend_decode.h"
#include "tests/bench/backend_point.h"
#include "tests/bench/bench_cli.h"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/plugin_decoder.h"

namespace kv::bench {
namespace {

struct Options {
  std::string plugin, plugin_option, out, only;
  bool list = false, self_test = false;
  int device = 0;
  std::vector<int> batches = {1, 16, 64, 128}, contexts = {1024, 8192, 32768};
  std::vector<int> mla_heads = {16, 64, 128};
  BackendRunOptions run;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "kvbench_backend_decode: %s\n"
               "usage: kvbench_backend_decode --plugin LIB.so [--plugin-option TEXT] "
               "[--out FILE.md] [--batches LIST] [--contexts LIST] [--mla-heads LIST] "
               "[--only gqa|mla] [--splits LIST] [--samples N] [--timing graph|eager] "
               "[--device N] [--quick]\n"
               "       kvbench_backend_decode --list | --self-test\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--plugin") o.plugin = value();
    else if (a == "--plugin-option") o.plugin_option = value();
    else if (a == "--out") o.out = value();
    else if (a == "--list") o.list = true;
    else if (a == "--self-test") o.self_test = true;
    else if (a == "--batches") o.batches = parse_list(value());
    else if (a == "--contexts") o.contexts = parse_list(value());
    else if (a == "--mla-heads") o.mla_heads = parse_list(value());
    else if (a == "--only") o.only = value();
    else if (a == "--splits") o.run.splits = parse_list(value());
    else if (a == "--samples") o.run.samples = std::max(1, std::atoi(value()));
    else if (a == "--device") o.device = std::atoi(value());
    else if (a == "--timing") {
      const std::string t = value();
      if (t != "graph" && t != "eager") usage("--timing takes graph or eager");
      o.run.timing = t == "graph" ? TimingMode::graph : TimingMode::eager;
    } else if (a == "--quick") {  // a smoke run: small shapes, few points
      o.batches = {1, 16};
      o.contexts = {1024, 8192};
      o.mla_heads = {16};
      o.run.splits = {1, 4, 16};
      o.run.samples = 3;
    } else if (a == "--help" || a == "-h") usage("help");
    else usage("unknown argument " + a);
  }
  if (!o.only.empty() && o.only != "gqa" && o.only != "mla") usage("--only takes gqa or mla");
  for (const auto* l : {&o.batches, &o.contexts, &o.mla_heads})
    for (int v : *l)
      if (v < 1) usage("batches, contexts and head counts must be positive");
  if (!o.list && !o.self_test && o.plugin.empty()) usage("--plugin LIB.so is required");
  return o;
}

std::string shape_line(const DecodeShape& s) {
  char b[96];
  std::snprintf(b, sizeof b, "%s %3d/%d hd %3d batch %4d ctx %6d", s.kind.c_str(), s.q_heads,
                s.kv_heads, s.head_dim, s.batch, s.context);
  return b;
}

void print_point(const BackendPoint& p) {
  std::printf("%s  sets %2d  built-in %-9s splits %3d %9.1f us %5.0f GB/s",
              shape_line(p.shape).c_str(), p.input_sets,
              p.builtin_path.empty() ? "-" : p.builtin_path.c_str(), p.builtin_splits,
              p.builtin_us, p.builtin_us > 0 ? p.kv_bytes / p.builtin_us / 1e3 : 0.0);
  if (p.plugin_us > 0)
    std::printf("  plugin %9.1f us %5.0f GB/s  ratio %.2f  plan %6.0f us  err %.2e", p.plugin_us,
                p.kv_bytes / p.plugin_us / 1e3, p.plugin_us / p.builtin_us, p.plan_us, p.max_err);
  std::printf("  %s%s\n", p.failed ? "FAILED: " : "", p.status.c_str());
  std::fflush(stdout);
}

std::string device_text(int dev) {
  cudaDeviceProp p{};
  BENCH_CUDA(cudaGetDeviceProperties(&p, dev));
  char b[128];
  std::snprintf(b, sizeof b, ", %d SMs, %.0f MB L2, %.1f GiB, sm_%d%d", p.multiProcessorCount,
                p.l2CacheSize / 1e6, p.totalGlobalMem / double(1ull << 30), p.major, p.minor);
  return std::string(p.name) + b;
}

int run(const Options& o) {
  if (o.self_test) return backend_self_test() == 0 ? 0 : 1;
  const std::vector<DecodeShape> grid = backend_grid(o.batches, o.contexts, o.mla_heads, o.only);
  if (o.list) {
    for (const DecodeShape& s : grid)
      std::printf("%s  K/V %9.1f MB\n", shape_line(s).c_str(), kv_read_bytes(s) / 1e6);
    return 0;
  }
  if (!gpu_visible()) {
    std::fprintf(stderr, "kvbench_backend_decode: no CUDA GPU visible: nothing run (exit 77)\n");
    return 77;
  }
  BENCH_CUDA(cudaSetDevice(o.device));
  BENCH_CUDA(cudaFree(nullptr));  // the primary context, which the plugin's runtime joins
  BackendRunInfo info;
  info.device = device_text(o.device);
  BENCH_CUDA(cudaDriverGetVersion(&info.driver_version));
  BENCH_CUDA(cudaRuntimeGetVersion(&info.runtime_version));
  std::unique_ptr<PluginDecoder> plugin;
  try {
    plugin = std::make_unique<PluginDecoder>(o.plugin, o.device, o.plugin_option);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvbench_backend_decode: %s\n", e.what());
    return 3;
  }
  BackendRunOptions run = o.run;
  if (run.timing == TimingMode::graph && !plugin->graphs_allowed()) {
    std::fprintf(stderr, "kvbench_backend_decode: the plugin declares graph support '%s': both "
                         "sides timed eagerly\n", plugin->graphs_name().c_str());
    run.timing = TimingMode::eager;
  }
  info.plugin_path = o.plugin;
  info.plugin_name = plugin->name();
  info.plugin_version = plugin->version();
  info.plugin_io_dtype = backend::dtype_name(backend::to_abi(plugin->io_dtype()));
  info.plugin_graphs = plugin->graphs_name();
  info.timing = run.timing;
  info.samples = run.samples;
  std::printf("device: %s\nplugin: %s %s (io %s, graphs %s)\ntiming: %s; the plugin's plan runs "
              "once per point before timing, paged_decode alone is timed\n",
              info.device.c_str(), info.plugin_name.c_str(), info.plugin_version.c_str(),
              info.plugin_io_dtype.c_str(), info.plugin_graphs.c_str(),
              run.timing == TimingMode::graph ? "CUDA graph replays" : "eager launches");
  std::fflush(stdout);

  std::vector<BackendPoint> points;
  int failed = 0;
  for (const DecodeShape& s : grid) {
    points.push_back(run_backend_point(s, *plugin, run));
    print_point(points.back());
    failed += points.back().failed ? 1 : 0;
    // A faulting kernel leaves the context unusable: report what ran and stop.
    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
      points.back().failed = true;
      points.back().status += std::string("; CUDA context lost: ") + cudaGetErrorString(e) +
                              " (the remaining points were not run)";
      ++failed;
      break;
    }
  }
  const std::string md = backend_markdown(info, points);
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    if (!(f << md)) std::fprintf(stderr, "kvbench_backend_decode: cannot write %s\n",
                                 o.out.c_str());
  }
  std::printf("\n%s", md.c_str());
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace kv::bench

int main(int argc, char** argv) {
  return kv::bench::run_main("kvbench_backend_decode",
                             [&] { return kv::bench::run(kv::bench::parse(argc, argv)); });
}
