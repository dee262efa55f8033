// reference_gpu_test.cpp — the GPU float64 reference (reference/cuda) against the CPU reference
// on identical jobs: every attention output row and every logit vector agree to 1e-9 relative
// (the GPU sums the softmax over threads and uses CUDA's exp/sin/pow, so the last few bits may
// differ; 1e-9 is the bound issue 20 asks of the two). Jobs are the engine's patterns: chunked
// prefills of awkward sizes, single-token decodes, a first chunk that starts after a cached
// prefix, a recompute after preemption (positions the reference already has), requests released
// and slots reused, a new epoch; layer kinds attention (GQA 1, 4, 7; head dims 16 and 160), MLA
// and linear; every cache dtype, fp8 with the engine's rows as hints. And the protection: a
// stray write into the reference's history is caught at the next step.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "check/host_reference.h"
#include "check/tolerances.h"
#include "device/device.h"
#include "engine/model_weights.h"
#include "reference/cuda/cuda_reference.h"

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

TEST_P(ReferenceGpu, AgreesWithTheCpuReference) {
  const Case& c = GetParam();
  const Scenario s = scenario_of(c);
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w);
  HostReference host(w, s.cache, s.model.num_q_heads, s.model.head_dim, 2);
  const int32_t q_dim = c.heads * c.dim, L = static_cast<int32_t>(c.layers.size());
  const int32_t capacity = s.workload.prompt_len.max + s.workload.new_tokens.max;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(0, s.model.vocab_size - 1);
  double worst = 0.0, worst_logits = 0.0;
  int64_t rows = 0;
  for (int32_t epoch = 0; epoch < 2; ++epoch) {
    gpu->begin_epoch();
    host.begin_epoch();
    // Five requests: their tokens, how far the engine has computed, and a step pattern.
    std::vector<std::vector<int32_t>> tokens(5);
    std::vector<int32_t> done(5, 0);
    for (auto& t : tokens) {
      t.resize(static_cast<size_t>(capacity));
      for (auto& x : t) x = tok(rng);
    }
    done[3] = 17;  // a cached prefix: its first chunk starts at 17
    for (int32_t step = 0; step < 14; ++step) {
      std::vector<RefJob> jobs;
      int64_t row = 0;
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
        jobs.push_back(std::move(j));
      }
      // The "engine's" fp8 rows: random codes, the same for both references.
      StepQuantRows quant(static_cast<size_t>(L));
      for (int32_t l = 0; l < L; ++l) {
        if (c.layers[l] == LayerKind::linear) continue;
        quant[l].resize(static_cast<size_t>(row * q_dim));
        for (auto& v : quant[l]) v = static_cast<float>(tok(rng) - 30) / 8.0f;
      }
      gpu->run(jobs, quant, {});
      host.run(jobs, quant, {});
      for (size_t j = 0; j < jobs.size(); ++j) {
        for (int32_t pos = jobs[j].start; pos < jobs[j].end; ++pos)
          for (int32_t l = 0; l < L; ++l) {
            const double* a = gpu->attn_out(j, pos, l);
            const double* b = host.attn_out(j, pos, l);
            for (int32_t h = 0; h < c.heads; ++h, ++rows) {
              const double e = rel(a + h * c.dim, b + h * c.dim, c.dim);
              worst = std::max(worst, e);
              ASSERT_LE(e, 1e-9) << c.name << " epoch " << epoch << " step " << step << " job "
                                 << j << " pos " << pos << " layer " << l << " head " << h;
            }
          }
        if (!jobs[j].logits) continue;
        const auto a = gpu->logits(j), b = host.logits(j);
        const double e = rel(a.data(), b.data(), static_cast<int>(b.size()));
        worst_logits = std::max(worst_logits, e);
        ASSERT_LE(e, 1e-9) << c.name << " logits, step " << step << " job " << j;
      }
      for (int32_t r = 0; r < 5; ++r)
        if (done[r] >= capacity) {
          gpu->release(100 + r);
          host.release(100 + r);
        }
    }
  }
  EXPECT_GT(rows, 400);  // every shape compares hundreds of rows at least
  std::printf("%s: %lld rows, worst rel diff %.3g, logits %.3g, %lld device bytes\n", c.name,
              static_cast<long long>(rows), worst, worst_logits,
              static_cast<long long>(gpu->peak_device_bytes()));
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

TEST(ReferenceGpuProtection, AStrayWriteIntoTheHistoryIsCaughtAtTheNextStep) {
  if (!cuda_gpu_present()) GTEST_SKIP() << "no CUDA GPU";
  const Scenario s = scenario_of({"p", {LayerKind::attention}, 4, 2, 16, DType::bf16});
  const ModelWeights w = make_model_weights(s.model, s.cache);
  auto gpu = make_cuda_reference(s, w);
  std::vector<int32_t> t(49, 3);
  gpu->begin_epoch();
  RefJob j{.request = 1, .tokens = t, .start = 0, .end = 8, .capacity = 49, .first_row = 0,
           .logits = true};
  gpu->run({j}, StepQuantRows(1), {});
  j.start = 8;
  j.end = 9;
  gpu->run({j}, StepQuantRows(1), {});  // clean: nothing changed
  corrupt_history_for_test(*gpu, 1);
  j.start = 9;
  j.end = 10;
  try {
    gpu->run({j}, StepQuantRows(1), {});
    FAIL() << "the corrupted history was not noticed";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("request 1's K of layer 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kv::test
