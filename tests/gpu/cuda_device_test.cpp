// cuda_device_test.cpp — CudaDevice itself: memory that behaves like the host device's (reuse keeps
// bytes, fresh memory is zero, graph pools are private), fill / memset_async writing the host's
// bytes, real CUDA graphs (replay = eager, replay reads updated persistent inputs, a buffer
// captured stale stays stale: the graph-metadata bug mechanism), and errors that name the op.
#include <cstring>

#include "gpu/gpu_test_support.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/device/allocator_contract.h"

namespace kv::gpu_test {
namespace {

class GpuDevice : public GpuTest {};

std::vector<unsigned char> pattern_bytes(size_t n, unsigned char salt) {
  std::vector<unsigned char> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 7 + salt);
  return b;
}

TEST_F(GpuDevice, ProbeAndName) {
  EXPECT_TRUE(cuda_gpu_present());
  EXPECT_EQ(cuda_->name(), "cuda");
  EXPECT_GT(cuda_->free_bytes().value_or(0), 0u);
  EXPECT_LE(cuda_->free_bytes().value_or(0), cuda_->total_bytes());
  std::printf("device: %s\n", cuda_->description().c_str());
}

TEST_F(GpuDevice, AllocatorHasTheHostsSemantics) {
  CudaDevice& d = *cuda_;
  test::expect_gpu_like_reuse(d);
  int x = 0;
  EXPECT_THROW(d.release(&x), DeviceError);
  d.release(nullptr);
}

TEST_F(GpuDevice, GraphPoolsArePrivate) {
  CudaDevice& d = *cuda_;
  void* outside = d.alloc(512);
  d.release(outside);
  d.begin_capture();
  void* inside = d.alloc(512);  // not the released general buffer: a graph's private pool
  EXPECT_NE(inside, outside);
  d.release(inside);
  d.end_capture();
  void* after = d.alloc(512);  // the general pool's buffer again, never the graph's
  EXPECT_EQ(after, outside);
  EXPECT_NE(after, inside);
  d.release(after);
}

TEST_F(GpuDevice, OutOfMemoryIsADeviceErrorThatSaysHowMuch) {
  const size_t huge = cuda_->total_bytes() * 2;
  try {
    cuda_->alloc(huge);
    FAIL() << "allocating twice the GPU's memory succeeded";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("out of GPU memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(huge)), std::string::npos) << e.what();
  }
  void* p = cuda_->alloc(256);  // the device is still usable
  cuda_->release(p);
  cuda_->synchronize();
}

TEST_F(GpuDevice, FillAndMemsetWriteTheHostsBytes) {
  SCOPED_TRACE(trace_seed());
  const FillPattern patterns[] = {FillPattern::zero, FillPattern::nan, FillPattern::inf,
                                  FillPattern::random_bits};
  const size_t total = 5000;
  const Twin buf = twin(total);
  for (FillPattern p : patterns)
    for (size_t offset : {0, 1, 3, 8, 13})
      for (size_t n : {1, 3, 7, 8, 9, 255, 256, 1000, 4097})
        for (bool memset : {false, true}) {
          SCOPED_TRACE("pattern " + std::to_string(int(p)) + " offset " + std::to_string(offset) +
                       " bytes " + std::to_string(n) + (memset ? " memset_async" : " fill"));
          set(buf, pattern_bytes(total, static_cast<unsigned char>(n)));  // surroundings
          const uint64_t seed = rng_();
          on_both([&](Device& d, Side s) {
            unsigned char* dst = buf.p<unsigned char>(s) + offset;
            if (memset) d.memset_async(dst, n, p);
            else d.fill(dst, n, p, seed);
          });
          EXPECT_TRUE(same_bytes(get<unsigned char>(buf, Side::host, total),
                                 get<unsigned char>(buf, Side::cuda, total)));
        }
  // The dtype fills of fill_blocks, through the launcher directly (fp8 / f16 / bf16 codes).
  for (DType t : {DType::f16, DType::bf16, DType::fp8_e4m3})
    for (FillPattern p : patterns) {
      std::vector<unsigned char> want(333);
      host::fill_pattern(want.data(), want.size(), p, t, 42, 9);
      cuda::fill_pattern(buf.d, want.size(), p, t, 42, 9, cuda_->stream());
      cuda_->synchronize();
      EXPECT_TRUE(same_bytes(want, get<unsigned char>(buf, Side::cuda, want.size())))
          << test::dtype_name(t) << " pattern " << int(p);
    }
}

// Small integers as floats: every product and sum of the chain below is exact in float, so the
// two devices agree bit for bit even through quant_fp8's rounding steps.
std::vector<float> small_ints(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(test::random_int(rng, -3, 3));
  return v;
}

// A small op chain for the graph tests: y = quant_fp8(W x + b) with amax over *rows rows, then
// argmax — persistent inputs x, rows; outputs y, tokens.
struct Chain {
  Twin x, w, b, y, rows, tokens;
  int32_t n = 6, in = 24, out = 16;
  void run(Device& d, Side s) const {
    d.linear({x.p<float>(s), in, w.p<float>(s), b.p<float>(s), y.p<float>(s), out, n, in, out});
    QuantFp8Args q;
    q.x = q.y = y.p<float>(s);
    q.row_stride = out;
    q.cols = out;
    q.num_rows = n;
    q.amax_rows = rows.p<int32_t>(s);
    d.quant_fp8(q);
    d.argmax({y.p<float>(s), tokens.p<int32_t>(s), n, out});
  }
};

TEST_F(GpuDevice, GraphReplayEqualsEagerAndReadsUpdatedInputs) {
  SCOPED_TRACE(trace_seed());
  Chain c;
  c.x = upload(small_ints(rng_, c.n * c.in));
  c.w = upload(small_ints(rng_, c.out * c.in));
  c.b = upload(small_ints(rng_, c.out));
  c.y = poisoned_floats(c.n * c.out);
  c.rows = upload(std::vector<int32_t>{4});
  c.tokens = upload(std::vector<int32_t>(c.n, -7));
  // Capture on both devices (the host device emulates graphs by recording descriptors).
  GraphId g[2];
  for (Side s : {Side::host, Side::cuda}) {
    dev(s).begin_capture();
    c.run(dev(s), s);
    g[s == Side::cuda] = dev(s).end_capture();
  }
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    // New persistent inputs between replays: a replay must read them, not the captured values.
    set(c.x, small_ints(rng_, c.n * c.in));
    set(c.rows, std::vector<int32_t>{1 + step});
    set(c.y, std::vector<float>(c.n * c.out, f32_from_bits(kPoisonBits)));
    host_.replay(g[0]);
    cuda_->replay(g[1]);
    cuda_->synchronize();
    const std::vector<float> replayed = get<float>(c.y, Side::cuda, c.n * c.out);
    const std::vector<int32_t> replayed_tokens = get<int32_t>(c.tokens, Side::cuda, c.n);
    EXPECT_TRUE(same_floats(get<float>(c.y, Side::host, c.n * c.out), replayed));
    EXPECT_EQ(get<int32_t>(c.tokens, Side::host, c.n), replayed_tokens);
    // Eager run on the same inputs gives the same bits as the replay.
    set(c.y, std::vector<float>(c.n * c.out, f32_from_bits(kPoisonBits)));
    c.run(*cuda_, Side::cuda);
    cuda_->synchronize();
    EXPECT_TRUE(same_floats(replayed, get<float>(c.y, Side::cuda, c.n * c.out)));
    EXPECT_EQ(replayed_tokens, get<int32_t>(c.tokens, Side::cuda, c.n));
  }
}

// The graph-metadata bug (seed 003): the graph captured the address of a buffer filled before the
// capture; later steps write their metadata to a fresh buffer; a replay still reads the old one.
TEST_F(GpuDevice, ReplayReadsTheStaleBufferItCaptured) {
  const int32_t n = 4, vocab = 8;
  const Twin stale_rows = upload(std::vector<int32_t>{1});
  // Row 0 (all the stale count covers) is small, the other rows large: the two scales differ.
  std::vector<float> xs = test::random_floats(rng_, n * vocab, -100.0f, 100.0f);
  for (int32_t i = 0; i < vocab; ++i) xs[i] *= 0.01f;
  const Twin x = upload(xs);
  const Twin y = poisoned_floats(n * vocab);
  GraphId g[2];
  for (Side s : {Side::host, Side::cuda}) {
    dev(s).begin_capture();
    QuantFp8Args q;
    q.x = x.p<float>(s);
    q.y = y.p<float>(s);
    q.row_stride = q.cols = vocab;
    q.num_rows = n;
    q.amax_rows = stale_rows.p<int32_t>(s);  // the captured address
    dev(s).quant_fp8(q);
    g[s == Side::cuda] = dev(s).end_capture();
  }
  // The "fresh" metadata of the next step goes elsewhere; the graph never sees it.
  const Twin fresh_rows = upload(std::vector<int32_t>{n});
  host_.replay(g[0]);
  cuda_->replay(g[1]);
  cuda_->synchronize();
  const std::vector<float> h = get<float>(y, Side::host, n * vocab);
  EXPECT_TRUE(same_floats(h, get<float>(y, Side::cuda, n * vocab)));
  // And it is really the stale value that was used: an eager run with the fresh count differs.
  const Twin y2 = poisoned_floats(n * vocab);
  QuantFp8Args q;
  q.x = x.p<float>(Side::cuda);
  q.y = y2.p<float>(Side::cuda);
  q.row_stride = q.cols = vocab;
  q.num_rows = n;
  q.amax_rows = fresh_rows.p<int32_t>(Side::cuda);
  cuda_->quant_fp8(q);
  cuda_->synchronize();
  EXPECT_FALSE(same_floats(h, get<float>(y2, Side::cuda, n * vocab)))
      << "amax over 1 row and over 4 rows should give different scales";
}

TEST_F(GpuDevice, CopiesAreRefusedWhileCapturingAndCallsOutOfOrderThrow) {
  CudaDevice& d = *cuda_;
  void* p = d.alloc(64);
  void* q = d.alloc(64);
  std::vector<unsigned char> b(64, 1);
  d.upload(q, b.data(), b.size());
  EXPECT_THROW(d.end_capture(), DeviceError);
  EXPECT_THROW(d.replay(0), DeviceError);
  d.begin_capture();
  EXPECT_THROW(d.begin_capture(), DeviceError);
  EXPECT_THROW(d.replay(0), DeviceError);
  try {
    d.upload(p, b.data(), b.size());
    ADD_FAILURE() << "upload during capture did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("during graph capture"), std::string::npos) << e.what();
  }
  EXPECT_THROW(d.download(b.data(), p, b.size()), DeviceError);
  d.fill(p, 64, FillPattern::nan, 0);               // allowed: runs now, not recorded (host too)
  d.memset_async(q, 64, FillPattern::inf);          // recorded: runs on replay only
  d.synchronize();                                  // a no-op while capturing
  const GraphId g = d.end_capture();
  EXPECT_EQ(g, 0);
  std::vector<uint32_t> w(16);
  d.download(w.data(), p, 64);
  for (uint32_t x : w) EXPECT_EQ(x, 0x7fc00000u) << "fill during capture must run at once";
  std::vector<unsigned char> qb(64);
  d.download(qb.data(), q, 64);
  EXPECT_EQ(qb, b) << "a captured memset_async must not run before a replay";
  EXPECT_THROW(d.replay(1), DeviceError);
  d.replay(g);
  d.synchronize();
  d.download(w.data(), q, 64);
  for (uint32_t x : w) EXPECT_EQ(x, 0x7f800000u) << "the replay runs the captured memset_async";
  d.release(p);
  d.release(q);
}

TEST_F(GpuDevice, ALaunchErrorNamesTheOpAndLeavesTheDeviceUsable) {
  // Dynamic shared memory for a head_dim of 100000 floats exceeds every GPU's limit: the launch
  // itself fails (a recoverable error, unlike a fault inside a kernel).
  VarlenAttnArgs a;
  a.num_seqs = 1;
  a.num_q_heads = 1;
  a.num_kv_heads = 1;
  a.head_dim = 100000;
  try {
    cuda_->varlen_attention(a);
    FAIL() << "a launch with 800 KB of shared memory succeeded";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("varlen_attention"), std::string::npos) << e.what();
  }
  Twin t = upload(std::vector<float>{1.0f, 2.0f});
  cuda_->memset_async(t.d, 8, FillPattern::zero);
  cuda_->synchronize();
  EXPECT_EQ(get<float>(t, Side::cuda, 2), (std::vector<float>{0.0f, 0.0f}));
}

// A kernel that faults (an illegal address) poisons the CUDA context for good, so this runs in a
// child process (gtest's threadsafe death-test style re-executes the binary for that one test).
TEST_F(GpuDevice, AFaultSurfacesAtSynchronizeNamingTheOps) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CudaDevice d;
        float* bad = reinterpret_cast<float*>(uintptr_t{0x10});
        try {
          d.rms_norm({bad, bad, 64, 128, 1e-6f});
          d.synchronize();
        } catch (const DeviceError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::fflush(stderr);
          std::_Exit(7);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(7), "synchronize.*rms_norm.*cudaError");
}

}  // namespace
}  // namespace kv::gpu_test
