// reference_gpu_test.cpp — the GPU float64 reference (reference/cuda) against the CPU reference
// on identical jobs: every attention output row and every logit vector agree to 1e-9 relative
// (the GPU sums the softmax over threads and uses CUDA's exp/sin/pow, so the last few bits may
// differ; 1e-9 is the bound issue 20 asks of the two). Jobs are the engine's patterns: chunked
// prefills of awkward sizes, single-token decodes, a first chunk that starts after a cached
// prefix, a recompute after preemption (positions the reference already has), requests released
// and slots reused, a new epoch, contexts long enough that the attention kernel splits them over
// blocks; layer kinds attention (GQA 1, 4, 7; head dims 16 and 160), MLA and linear; every cache
// dtype, fp8 with the engine's rows as hints. Histories kept across epochs: reused exactly as
// far as a fresh computation gives the same rows, and within what may be kept. And the
// protection: a stray write into the reference's history is caught at the next step, into a
// kept history when it is taken up again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "reference/host/host_reference.h"
#include "check/tolerances.h"
#include "device/device.h"
#include "model/model_weights.h"
#include "kernels/model_math.cuh"
#include "reference/cuda/cuda_reference.h"
#include "reference/cuda_layout.h"
#include "reference/host/ref_sequence.h"

namespace kv {
bool cuda_gpu_present();
}

namespace kv::test {
namespace {

struct Case {
  const char* name;
  std::vector<LayerKind> layers;
  int32_t heads, kv_heads, dim;
  DType dtype;
  float k_scale = 1.0f, v_scale = 1.0f;
};

Scenario scenario_of(const Case& c) {
  Scenario s;
  s.model.layers = c.layers;
  s.model.num_q_heads = c.heads;
  s.model.num_kv_heads = c.kv_heads;
  s.model.head_dim = c.dim;
  s.model.hidden_size = 48;
  s.model.vocab_size = 61;
  s.model.kv_lora_rank = 24;
  s.model.qk_rope_dim = 8;
  s.cache.dtype = c.dtype;
  s.cache.k_scale = c.k_scale;
  s.cache.v_scale = c.v_scale;
  s.workload.prompt_len = {1, 40};
  s.workload.new_tokens = {1, 9};
  return s;
}

double rel(const double* a, const double* b, int n) {
  double d = 0, r = 0;
  for (int i = 0; i < n; ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    r += b[i] * b[i];
  }
  return std::sqrt(d) / std::max(std::sqrt(r), 1e-30);
}

class ReferenceGpu : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  }
};

// Both references on the same jobs, every output row and logit vector compared.
struct Compare {
  const Case& c;
  StepReference& gpu;
  HostReference& host;
  std::mt19937 rng{7};
  double worst = 0.0, worst_logits = 0.0;
  int64_t rows = 0;
  // If set, the engine's fp8 rows of a step (else random codes).
  std::function<void(StepQuantRows&)> hints;
  // If set, a GPU reference without history that must agree with `gpu` to 1e-12 (reused rows
  // are what a fresh computation gives, up to the softmax's order of summation).
  StepReference* fresh = nullptr;

  int32_t layers() const { return static_cast<int32_t>(c.layers.size()); }
  void step(const std::vector<RefJob>& jobs, const std::string& where) {
    // The "engine's" fp8 rows: random codes, the same for both references.
    int64_t n = 0;
    for (const RefJob& j : jobs) n = std::max(n, j.first_row + j.end - j.start);
    std::uniform_int_distribution<int32_t> code(0, 60);
    StepQuantRows quant(static_cast<size_t>(layers()));
    for (int32_t l = 0; l < layers(); ++l) {
      if (c.layers[l] == LayerKind::linear) continue;
      quant[l].resize(static_cast<size_t>(n * c.heads * c.dim));
      for (auto& v : quant[l]) v = static_cast<float>(code(rng) - 30) / 8.0f;
    }
    if (hints) hints(quant);
    gpu.run(jobs, quant, {});
    host.run(jobs, quant, {});
    if (fresh) fresh->run(jobs, quant, {});
    for (size_t j = 0; j < jobs.size(); ++j) {
      for (int32_t pos = jobs[j].start; pos < jobs[j].end; ++pos)
        for (int32_t l = 0; l < layers(); ++l) {
          const double* a = gpu.attn_out(j, pos, l);
          const double* b = host.attn_out(j, pos, l);
          if (fresh)
            ASSERT_LE(rel(a, fresh->attn_out(j, pos, l), c.heads * c.dim), 1e-12)
                << c.name << " " << where << " job " << j << " pos " << pos << " layer " << l
                << ": the history differs from a fresh GPU reference";
          for (int32_t h = 0; h < c.heads; ++h, ++rows) {
            const double e = rel(a + h * c.dim, b + h * c.dim, c.dim);
            worst = std::max(worst, e);
            ASSERT_LE(e, 1e-9) << c.name << " " << where << " job " << j << " pos " << pos
                               << " layer " << l << " head " << h;
          }
        }
      if (!jobs[j].logits) continue;
      const auto a = gpu.logits(j), b = host.logits(j);
      const double e = rel(a.data(), b.data(), static_cast<int>(b.size()));
      worst_logits = std::max(worst_logits, e);
      ASSERT_LE(e, 1e-9) << c.name << " logits, " << where << " job " << j;
    }
  }
  void report(const char* what) const {
    std::printf("%s %s: %lld rows, worst rel diff %.3g, logits %.3g, %lld device bytes\n", c.name,
                what, static_cast<long long>(rows), worst, worst_logits,
                static_cast<long long>(gpu.peak_device_bytes()));
  }
};

// The engine's step patterns over short contexts, two epochs; `per_run` steps' jobs go to each
// run() together (the checker's batching: several jobs of one request in a run, in step order).
// The second epoch replays requests 100-102 (the GPU reference takes up their kept histories as
// far as its new hints allow; with linear layers, as far as a snapshot of the states), 103's
// tokens from position 20 on are new, 104's all new.
void short_contexts(const Case& c, int32_t per_run) {
  const Scenario s = scenario_of(c);
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w, int64_t{1} << 30);
  HostReference host(w, s.cache, s.model.num_q_heads, s.model.head_dim, 2);
  Compare cmp{c, *gpu, host};
  const int32_t capacity = s.workload.prompt_len.max + s.workload.new_tokens.max;
  std::uniform_int_distribution<int32_t> tok(0, s.model.vocab_size - 1);
  std::vector<std::vector<int32_t>> tokens(5, std::vector<int32_t>(capacity));
  for (auto& t : tokens)
    for (auto& x : t) x = tok(cmp.rng);
  int64_t replayable = 0;  // positions of epoch 0 that epoch 1 asks for with the same tokens
  for (int32_t epoch = 0; epoch < 2; ++epoch) {
    gpu->begin_epoch();
    host.begin_epoch();
    // Five requests: their tokens, how far the engine has computed, and a step pattern.
    if (epoch == 1) {
      for (size_t i = 20; i < tokens[3].size(); ++i) tokens[3][i] = tok(cmp.rng);
      for (auto& x : tokens[4]) x = tok(cmp.rng);
    }
    std::vector<int32_t> done(5, 0);
    done[3] = 17 - 9 * epoch;  // a cached prefix: its first chunk starts at 17, then 8
    std::vector<RefJob> jobs;
    int64_t row = 0;
    std::vector<int32_t> finished;
    for (int32_t step = 0; step < 14; ++step) {
      for (int32_t r = 0; r < 5; ++r) {
        if (done[r] >= capacity || (step + r) % 4 == 3) continue;  // some idle each step
        int32_t start = done[r];
        if (r == 1 && step == 6) start = 0;  // preempted: recompute from position 0
        const int32_t n = std::min(capacity - start,
                                   start < 20 ? std::vector<int32_t>{1, 3, 7, 16}[step % 4] : 1);
        RefJob j{.request = 100 + r, .tokens = tokens[r], .start = start, .end = start + n,
                 .capacity = capacity, .first_row = row, .logits = (step + r) % 2 == 0};
        row += n;
        done[r] = std::max(done[r], start + n);
        if (done[r] >= capacity) finished.push_back(100 + r);
        jobs.push_back(std::move(j));
      }
      if ((step + 1) % per_run != 0 && step != 13) continue;
      cmp.step(jobs, "epoch " + std::to_string(epoch) + " step " + std::to_string(step));
      if (::testing::Test::HasFatalFailure()) return;
      jobs.clear();
      row = 0;
      for (int32_t id : finished) {
        gpu->release(id);
        host.release(id);
      }
      finished.clear();
    }
    if (epoch == 0) replayable = done[0] + done[1] + done[2] + std::min(done[3], 20);
  }
  EXPECT_GT(cmp.rows, 400);  // every shape compares hundreds of rows at least
  cmp.report(per_run == 1 ? "short contexts" : "short contexts, steps together");
  const CudaReferenceWork work = cuda_reference_work(*gpu);
  std::printf("  %lld positions computed, %lld reused\n", static_cast<long long>(work.computed),
              static_cast<long long>(work.reused));
  // Less than all where a random hint adopted a code in either epoch (or, with linear layers,
  // where no snapshot of the states was taken).
  EXPECT_GT(work.reused, 0);
  EXPECT_LE(work.reused, replayable);
}

TEST_P(ReferenceGpu, AgreesWithTheCpuReference) { short_contexts(GetParam(), 1); }

TEST_P(ReferenceGpu, StepsTakenSeveralPerRunAgree) { short_contexts(GetParam(), 3); }

// Two requests of about 1,200 positions. A decode batch of two rows makes far fewer (K/V head,
// query group) blocks than the GPU has SMs, so the grouped attention kernel splits each context
// over several blocks and merges their states (ref_kernels.cu, with_splits: split whenever the
// grid is under 264 blocks and the context at least 512 positions). A 16-row chunk at position
// 700 splits too, and its first rows end before the last split begins.
TEST_P(ReferenceGpu, LongContextsSplitOverBlocksAgree) {
  const Case& c = GetParam();
  Scenario s = scenario_of(c);
  s.workload.prompt_len = {1, 1200};
  s.workload.new_tokens = {1, 8};
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w, int64_t{1} << 30);
  HostReference host(w, s.cache, s.model.num_q_heads, s.model.head_dim, 2);
  Compare cmp{c, *gpu, host};
  const int32_t capacity = 1208;
  std::uniform_int_distribution<int32_t> tok(0, s.model.vocab_size - 1);
  std::vector<int32_t> a(capacity), b(capacity);
  for (auto& x : a) x = tok(cmp.rng);
  for (auto& x : b) x = tok(cmp.rng);
  auto job = [&](int32_t request, int32_t start, int32_t end, int64_t row) {
    return RefJob{.request = request, .tokens = request == 0 ? a : b, .start = start,
                  .end = end, .capacity = capacity, .first_row = row, .logits = true};
  };
  gpu->begin_epoch();
  host.begin_epoch();
  cmp.step({job(0, 0, 700, 0), job(1, 0, 1190, 700)}, "prefill");
  if (HasFatalFailure()) return;
  cmp.step({job(0, 700, 716, 0)}, "16-row chunk at 700");
  if (HasFatalFailure()) return;
  cmp.step({job(0, 716, 1190, 0)}, "rest of the prompt");
  if (HasFatalFailure()) return;
  for (int32_t t = 0; t < 6; ++t) {
    cmp.step({job(0, 1190 + t, 1191 + t, 0), job(1, 1190 + t, 1191 + t, 1)},
             "decode " + std::to_string(t));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(cmp.rows, 2 * 1190 * static_cast<int64_t>(c.heads));
  cmp.report("long contexts");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceGpu,
    ::testing::Values(
        Case{"gqa1_bf16", {LayerKind::attention, LayerKind::attention}, 4, 4, 16, DType::bf16},
        Case{"gqa4_fp8", {LayerKind::attention}, 8, 2, 32, DType::fp8_e4m3, 0.0625f, 0.125f},
        Case{"gqa7_f16", {LayerKind::attention, LayerKind::attention}, 7, 1, 16, DType::f16},
        Case{"dim160_f32", {LayerKind::attention}, 2, 1, 160, DType::f32},
        Case{"mla_bf16", {LayerKind::mla, LayerKind::mla}, 4, 1, 16, DType::bf16},
        Case{"mla_fp8", {LayerKind::mla}, 4, 1, 16, DType::fp8_e4m3, 0.0625f, 0.0625f},
        Case{"hybrid_f16",
             {LayerKind::mla, LayerKind::linear, LayerKind::attention, LayerKind::linear}, 4, 1,
             16, DType::f16}),
    [](const auto& info) { return std::string(info.param.name); });

// measure_on_device(): the GPU reference compares the engine's rows itself and returns the
// checker's errors (measure_row: relative L2 per head with the row's floor, NaN where the engine's
// head is not finite); attn_out() then fetches single rows, for a failure's details.
TEST(ReferenceGpuMeasure, ErrorsAreTheCheckersArithmetic) {
  if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  const Case c{"m", {LayerKind::attention, LayerKind::mla}, 4, 2, 16, DType::bf16};
  const Scenario s = scenario_of(c);
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w, int64_t{1} << 30);
  ASSERT_TRUE(gpu->measure_on_device());
  HostReference host(w, s.cache, s.model.num_q_heads, s.model.head_dim, 2);
  const int32_t H = c.heads, D = c.dim, q_dim = H * D, L = 2, capacity = 49;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(0, s.model.vocab_size - 1);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<int32_t> t0(capacity), t1(capacity);
  for (auto& x : t0) x = tok(rng);
  for (auto& x : t1) x = tok(rng);
  gpu->begin_epoch();
  host.begin_epoch();
  for (int32_t step = 0; step < 3; ++step) {
    const std::vector<RefJob> jobs = {
        {.request = 0, .tokens = t0, .start = step * 5, .end = step * 5 + 5,
         .capacity = capacity, .first_row = 0, .logits = true},
        {.request = 1, .tokens = t1, .start = step * 3, .end = step * 3 + 3,
         .capacity = capacity, .first_row = 5, .logits = false}};
    const StepQuantRows quant(static_cast<size_t>(L));
    gpu->run(jobs, quant, {});
    host.run(jobs, quant, {});
    // The "engine's" rows: the reference, rounded to float, with noise of 10^-k (k = 1..4)
    // relative per (job, layer) and a NaN and an Inf in two heads.
    std::vector<std::vector<std::vector<float>>> got(jobs.size());  // [job][layer][rows * q_dim]
    for (size_t j = 0; j < jobs.size(); ++j)
      for (int32_t l = 0; l < L; ++l) {
        std::vector<float>& g = got[j].emplace_back();
        const double scale = std::pow(10.0, -1.0 - static_cast<double>((j + l + step) % 4));
        for (int32_t pos = jobs[j].start; pos < jobs[j].end; ++pos) {
          const double* want = host.attn_out(j, pos, l);
          for (int32_t i = 0; i < q_dim; ++i)
            g.push_back(static_cast<float>(want[i] * (1.0 + scale * noise(rng))));
        }
      }
    got[0][1][2 * q_dim + 1 * D + 3] = NAN;       // job 0, layer 1, its third row, head 1
    got[1][0][0 * q_dim + 3 * D + 0] = INFINITY;  // job 1, layer 0, its first row, head 3
    const std::vector<double> errs = gpu->measure(
        [&](size_t j, int32_t l) { return got[j][static_cast<size_t>(l)].data(); },
        kRowNormFloor);
    int64_t row = 0;
    for (size_t j = 0; j < jobs.size(); ++j)
      for (int32_t i = 0; i < jobs[j].end - jobs[j].start; ++i, ++row)
        for (int32_t l = 0; l < L; ++l) {
          const float* g = got[j][static_cast<size_t>(l)].data() + i * q_dim;
          const double* want = host.attn_out(j, jobs[j].start + i, l);
          double total = 0.0;
          for (int32_t k = 0; k < q_dim; ++k) total += want[k] * want[k];
          const double floor = kRowNormFloor * std::sqrt(total) / std::sqrt(double(H));
          for (int32_t h = 0; h < H; ++h) {
            const double e = errs[static_cast<size_t>((row * L + l) * H + h)];
            double num = 0.0, den = 0.0;
            bool finite = true;
            for (int32_t d = 0; d < D; ++d) {
              finite = finite && std::isfinite(g[h * D + d]);
              num += (g[h * D + d] - want[h * D + d]) * (g[h * D + d] - want[h * D + d]);
              den += want[h * D + d] * want[h * D + d];
            }
            const std::string at = "step " + std::to_string(step) + " job " + std::to_string(j) +
                                   " row " + std::to_string(i) + " layer " + std::to_string(l) +
                                   " head " + std::to_string(h);
            if (!finite) {
              EXPECT_TRUE(std::isnan(e)) << at;
              continue;
            }
            const double expect = std::sqrt(num) / std::max({std::sqrt(den), floor, 1e-30});
            EXPECT_GT(expect, 1e-8) << at;  // the noise shows
            EXPECT_NEAR(e, expect, 1e-8 * expect) << at;
          }
          const double* fetched = gpu->attn_out(j, jobs[j].start + i, l);
          EXPECT_LE(rel(fetched, want, q_dim), 1e-9) << "attn_out, job " << j << " row " << i;
        }
    EXPECT_TRUE(std::isnan(errs[static_cast<size_t>((2 * L + 1) * H + 1)]));
    EXPECT_TRUE(std::isnan(errs[static_cast<size_t>((5 * L + 0) * H + 3)]));
  }
}

// The protection tests' reference: one attention layer, room to keep histories, and request 1's
// job over 49 tokens.
class ReferenceGpuProtection : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
    gpu_ = make_cuda_reference(s_, w_, int64_t{1} << 30);
  }

  // Runs `j` after a stray write into request 1's history: the run must throw a DeviceError that
  // names request 1's K of layer 0 and says each of `more`.
  void expect_caught(const RefJob& j, std::vector<std::string> more) {
    try {
      gpu_->run({j}, StepQuantRows(1), {});
      FAIL() << "the corrupted history was not noticed";
    } catch (const DeviceError& e) {
      more.push_back("request 1's K of layer 0");
      for (const std::string& part : more)
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }

  const Scenario s_ = scenario_of({"p", {LayerKind::attention}, 4, 2, 16, DType::bf16});
  const ModelWeights w_ = make_model_weights(s_.model, s_.cache);
  std::unique_ptr<StepReference> gpu_;
  RefJob job_{.request = 1, .tokens = std::vector<int32_t>(49, 3), .start = 0, .end = 8,
              .capacity = 49, .first_row = 0, .logits = true};
};

TEST_F(ReferenceGpuProtection, AStrayWriteIntoTheHistoryIsCaughtAtTheNextStep) {
  gpu_->begin_epoch();
  gpu_->run({job_}, StepQuantRows(1), {});
  job_.start = 8;
  job_.end = 9;
  gpu_->run({job_}, StepQuantRows(1), {});  // clean: nothing changed
  corrupt_history_for_test(*gpu_, 1);
  job_.start = 9;
  job_.end = 10;
  expect_caught(job_, {});
}

// Kept histories across epochs (cuda_reference.h). One request replayed over four epochs, its
// engine rows NaN (never adopted) except in epochs 1 and 2, where one element of layer 0 at
// position p is the other code of a near-tie of the reference's own value: a fresh reference
// adopts it there. Epoch 1 must reuse exactly [0, p) and compute from p (the tie is settled
// otherwise than in epoch 0); epoch 2, with the same engine rows as epoch 1, reuses everything;
// epoch 3 (NaN again) reuses exactly [0, p) (the kept rows from p on followed the engine's code).
// Every row agrees with the CPU reference, which starts each epoch from nothing, and with a GPU
// reference made fresh for the epoch.
TEST(ReferenceGpuHistory, ATieSettledOnlyInALaterEpochIsRecomputedFromThere) {
  if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  for (const Case& c :
       {Case{"gqa4_fp8", {LayerKind::attention, LayerKind::attention}, 8, 2, 32,
             DType::fp8_e4m3, 0.0625f, 0.125f},
        Case{"mla_bf16", {LayerKind::mla, LayerKind::mla}, 4, 1, 16, DType::bf16}}) {
    SCOPED_TRACE(c.name);
    const Scenario s = scenario_of(c);
    const ModelWeights w = make_model_weights(s.model, s.cache);
    const int32_t q_dim = c.heads * c.dim, capacity = 49, prompt = 30;
    std::mt19937 rng(5);
    std::uniform_int_distribution<int32_t> tok(0, s.model.vocab_size - 1);
    std::vector<int32_t> t(capacity);
    for (auto& x : t) x = tok(rng);
    // A near-tie of layer 0 at a position p >= 10 (well inside the window, so that the GPU's
    // last bits cannot move it out).
    RefSequence seq(w, s.cache);
    seq.extend(t, prompt);
    const float scale = w.quant_scale(0, s.cache);
    auto q8 = [&](double v) { return round_through_scaled(static_cast<float>(v), DType::fp8_e4m3,
                                                          scale); };
    int32_t p = -1, e = -1;
    float theirs = 0.0f;
    for (int32_t pos = 10; pos < prompt && p < 0; ++pos)
      for (int32_t i = 0; i < q_dim && p < 0; ++i) {
        const double exact = seq.attn_out(pos, 0)[i], ours = q8(exact);
        const double other = q8(2.0 * exact - ours);
        if (other == ours || !std::isfinite(other)) continue;
        if (std::fabs(exact - 0.5 * (ours + other)) > 0.5 * kFp8TieWindow * (other - ours > 0
                                                                              ? other - ours
                                                                              : ours - other))
          continue;
        p = pos, e = i, theirs = static_cast<float>(other);
      }
    ASSERT_GE(p, 0) << "no near-tie in layer 0 at positions 10.." << prompt;
    auto gpu = make_cuda_reference(s, w, int64_t{1} << 30);
    HostReference host(w, s.cache, s.model.num_q_heads, s.model.head_dim, 2);
    Compare cmp{c, *gpu, host};
    int32_t epoch = 0;
    int32_t tie_row = -1;  // the step's row of position p, -1: not in this step
    cmp.hints = [&](StepQuantRows& quant) {
      for (auto& layer : quant) std::fill(layer.begin(), layer.end(), NAN);
      if ((epoch == 1 || epoch == 2) && tie_row >= 0)
        quant[0][static_cast<size_t>(tie_row * q_dim + e)] = theirs;
    };
    int64_t reused_before = 0;
    for (epoch = 0; epoch < 4; ++epoch) {
      gpu->begin_epoch();
      host.begin_epoch();
      auto fresh = make_cuda_reference(s, w, 0);
      cmp.fresh = fresh.get();
      const std::string at = "epoch " + std::to_string(epoch);
      tie_row = p;
      cmp.step({{.request = 7, .tokens = t, .start = 0, .end = prompt, .capacity = capacity,
                 .first_row = 0, .logits = true}},
               at + " prefill");
      if (HasFatalFailure()) return;
      tie_row = -1;
      for (int32_t pos = prompt; pos < capacity; ++pos) {
        cmp.step({{.request = 7, .tokens = t, .start = pos, .end = pos + 1,
                   .capacity = capacity, .first_row = 0, .logits = true}},
                 at + " decode " + std::to_string(pos));
        if (HasFatalFailure()) return;
      }
      gpu->release(7);
      host.release(7);
      const int64_t reused = cuda_reference_work(*gpu).reused - reused_before;
      reused_before += reused;
      const int64_t expected[] = {0, p, capacity, p};
      EXPECT_EQ(reused, expected[epoch]) << at << " (the tie is at position " << p << ")";
    }
  }
}

// A stray write into a kept (dormant) history is caught when the history is taken up again,
// before anything of it is read.
TEST_F(ReferenceGpuProtection, AStrayWriteIntoAKeptHistoryIsCaughtWhenItIsTakenUp) {
  gpu_->begin_epoch();
  gpu_->run({job_}, StepQuantRows(1), {});
  gpu_->begin_epoch();
  gpu_->run({job_}, StepQuantRows(1), {});  // clean: the kept rows are taken up
  EXPECT_EQ(cuda_reference_work(*gpu_).reused, 8);
  gpu_->begin_epoch();
  corrupt_history_for_test(*gpu_, 1);
  expect_caught(job_, {"kept from an earlier epoch"});
}

// What a finished request's history may take: with nothing to keep, the slot of a finished
// request goes to the next one and the next epoch reuses nothing; with room for two slots, both
// histories stay and the next epoch reuses both, for one slot more of device memory.
TEST(ReferenceGpuHistory, KeptHistoriesStayWithinWhatMayBeKept) {
  if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  const Scenario s = scenario_of({"k", {LayerKind::attention}, 4, 2, 16, DType::bf16});
  const ModelWeights w = make_model_weights(s.model, s.cache);
  const int64_t slot = ref_slot_layout(s.model, 49).bytes;
  std::vector<int32_t> a(49, 3), b(49, 5);
  const StepQuantRows never(1, std::vector<float>(20 * 4 * 16, NAN));  // no code adopted
  auto two_epochs = [&](int64_t keep) {
    auto gpu = make_cuda_reference(s, w, keep);
    for (int32_t epoch = 0; epoch < 2; ++epoch) {
      gpu->begin_epoch();
      for (int32_t r = 0; r < 2; ++r) {  // one after the other
        gpu->run({{.request = r, .tokens = r ? b : a, .start = 0, .end = 20, .capacity = 49,
                   .first_row = 0, .logits = true}},
                 never, {});
        gpu->release(r);
      }
    }
    return std::pair{cuda_reference_work(*gpu).reused, gpu->peak_device_bytes()};
  };
  const auto [reused0, peak0] = two_epochs(0);
  const auto [reused2, peak2] = two_epochs(2 * slot);
  EXPECT_EQ(reused0, 0);
  EXPECT_EQ(reused2, 40);
  EXPECT_GE(peak2 - peak0, slot);
  EXPECT_LT(peak2 - peak0, 2 * slot);
}

// A model with linear layers: a later epoch continues from a snapshot of the recurrent states.
// Epoch 0 computes a 30-position prefill (a snapshot at 30) and then single decodes (none); epoch
// 1 replays it and must reuse exactly [0, 30), restoring the snapshot, and compute the decodes
// from it, agreeing with the CPU reference and a fresh GPU reference. A stray write into the
// snapshot is caught when it is restored.
TEST(ReferenceGpuHistory, ALinearModelContinuesFromASnapshotOfItsStates) {
  if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  const Case c{"hybrid", {LayerKind::attention, LayerKind::linear, LayerKind::mla}, 4, 1, 16,
               DType::bf16};
  const Scenario s = scenario_of(c);
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w, int64_t{1} << 30);
  HostReference host(w, s.cache, s.model.num_q_heads, s.model.head_dim, 2);
  Compare cmp{c, *gpu, host};
  const int32_t capacity = 49, prompt = 30;
  std::uniform_int_distribution<int32_t> tok(0, s.model.vocab_size - 1);
  std::vector<int32_t> t(capacity);
  for (auto& x : t) x = tok(cmp.rng);
  cmp.hints = [](StepQuantRows& quant) {  // never adopted: the reuse is all the snapshot allows
    for (auto& layer : quant) std::fill(layer.begin(), layer.end(), NAN);
  };
  auto epoch = [&](const std::string& at) {
    gpu->begin_epoch();
    host.begin_epoch();
    auto fresh = make_cuda_reference(s, w, 0);
    cmp.fresh = fresh.get();
    const int64_t before = cuda_reference_work(*gpu).reused;
    cmp.step({{.request = 3, .tokens = t, .start = 0, .end = prompt, .capacity = capacity,
               .first_row = 0, .logits = true}},
             at + " prefill");
    for (int32_t pos = prompt; pos < capacity && !::testing::Test::HasFatalFailure(); ++pos)
      cmp.step({{.request = 3, .tokens = t, .start = pos, .end = pos + 1, .capacity = capacity,
                 .first_row = 0, .logits = true}},
               at + " decode " + std::to_string(pos));
    gpu->release(3);
    host.release(3);
    cmp.fresh = nullptr;
    return cuda_reference_work(*gpu).reused - before;
  };
  EXPECT_EQ(epoch("epoch 0"), 0);
  if (HasFatalFailure()) return;
  EXPECT_EQ(epoch("epoch 1"), prompt);
  if (HasFatalFailure()) return;
  gpu->begin_epoch();
  corrupt_state_snapshot_for_test(*gpu, 3);
  try {
    gpu->run({{.request = 3, .tokens = t, .start = 0, .end = prompt, .capacity = capacity,
               .first_row = 0, .logits = true}},
             StepQuantRows(3), {});
    FAIL() << "the corrupted snapshot was not noticed";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("request 3's snapshot of its recurrent states at "
                                         "position 30"),
              std::string::npos)
        << e.what();
  }
}

// Slots are handed out for a run's jobs with kept histories first: a new request earlier in the
// run takes a new slot (or evicts another history), never the kept history of a request that
// comes later in the same run.
TEST(ReferenceGpuHistory, AJobDoesNotEvictTheHistoryOfALaterJobInItsRun) {
  if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  const Scenario s = scenario_of({"e", {LayerKind::attention}, 4, 2, 16, DType::bf16});
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w, ref_slot_layout(s.model, 49).bytes);  // one kept slot
  const StepQuantRows never(1, std::vector<float>(40 * 4 * 16, NAN));
  std::vector<int32_t> a(49, 3), b(49, 5);
  auto job = [&](int32_t request, const std::vector<int32_t>& t, int64_t row) {
    return RefJob{.request = request, .tokens = t, .start = 0, .end = 20, .capacity = 49,
                  .first_row = row, .logits = true};
  };
  gpu->begin_epoch();
  gpu->run({job(1, b, 0)}, never, {});
  gpu->release(1);
  gpu->begin_epoch();
  gpu->run({job(2, a, 0), job(1, b, 20)}, never, {});  // 2 is new, 1 has its history
  EXPECT_EQ(cuda_reference_work(*gpu).reused, 20);
}

}  // namespace
}  // namespace kv::test
