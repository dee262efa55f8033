// staging_test.cpp — conform's device copies (src/conform/conform_staging.h): a pointer inside a
// staged buffer maps to the same offset of its copy, an unstaged one is refused, outputs come back
// after a call and inputs do not, and a call's error status reaches the case's message.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "conform/conform_staging.h"
#include "device/host_device.h"

namespace kv::conform {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

// A plugin op that writes 2 * x into y (quant_fp8's args, nothing else of it) and scribbles on x.
int32_t doubling(void*, const kvcheck_quant_fp8_args* a, void*, char* err, size_t n) {
  auto* x = static_cast<float*>(a->x.dl.data);
  auto* y = static_cast<float*>(a->y.dl.data);
  if (a->num_rows < 0) {
    snprintf(err, n, "negative rows");
    return KVCHECK_ERROR;
  }
  for (int32_t i = 0; i < a->num_rows * a->cols; ++i) {
    y[i] = 2 * x[i];
    x[i] = -1.f;
  }
  return KVCHECK_OK;
}

QuantFp8Args args(std::vector<float>& x, std::vector<float>& y, int32_t rows) {
  QuantFp8Args a;
  a.x = x.data();
  a.y = y.data();
  a.row_stride = 2;
  a.cols = 2;
  a.num_rows = rows;
  return a;
}

TEST(Staging, InteriorPointersMapToTheSameOffsetAndUnstagedOnesAreRefused) {
  HostDevice dev;
  Staging s(dev, kCpu);
  std::vector<float> x(8, 1.f), other(4);
  s.input(x);
  const auto* base = static_cast<const float*>(s.to_device(x.data()));
  EXPECT_NE(base, x.data());  // a copy, also on the host device
  EXPECT_EQ(s.to_device(x.data() + 5), base + 5);
  EXPECT_EQ(s.to_device(nullptr), nullptr);
  EXPECT_THROW(s.to_device(other.data()), std::logic_error);
}

TEST(Staging, OutputsComeBackInputsDoNot) {
  HostDevice dev;
  Staging s(dev, kCpu);
  std::vector<float> x{1, 2, 3, 4}, y(4, -9.f);
  s.input(x);
  s.output(y);
  const kvcheck_backend b{};
  EXPECT_EQ(s.call(b, doubling, s.builder().quant_fp8(args(x, y, 2))), "");
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4}));  // the plugin's scribble stayed on its copy
}

TEST(Staging, AnErrorStatusCarriesThePluginsMessage) {
  HostDevice dev;
  Staging s(dev, kCpu);
  std::vector<float> x(4), y(4);
  s.input(x);
  s.output(y);
  const kvcheck_backend b{};
  const std::string why = s.call(b, doubling, s.builder().quant_fp8(args(x, y, -1)));
  EXPECT_NE(why.find("negative rows"), std::string::npos) << why;
}

}  // namespace
}  // namespace kv::conform
