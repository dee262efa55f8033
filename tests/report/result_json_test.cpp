// result_json_test.cpp — the "kvcheck.result/2" document: every field, nulls, non-finite numbers.
#include "report/result_json.h"

#include <gtest/gtest.h>

#include <limits>

#include "report/format.h"
#include "report/version.h"
#include "sample_result.h"

namespace kv {
namespace {

using nlohmann::json;

TEST(ResultJson, TopLevelFields) {
  RunResult r = test::sample_result();
  json j = to_json(r);
  EXPECT_EQ(j["schema"], "kvcheck.result/2");
  EXPECT_EQ(j["kvcheck_version"], kKvcheckVersion);
  EXPECT_EQ(j["build"]["version"], kKvcheckVersion);
  EXPECT_EQ(j["build"]["commit"], build_identity().commit);
  EXPECT_EQ(j["scenario"], "sample");
  EXPECT_EQ(j["scenario_path"], "scenarios/sample.json");
  EXPECT_EQ(j["device"], "host");
  EXPECT_EQ(j["seed"].get<uint64_t>(), 1234567890123ull);
  EXPECT_EQ(j["regressions"],
            json::array({"new-blocks-not-zeroed", "padded-rows-in-reduction"}));
  EXPECT_EQ(j["expected"], "corrupt");
  EXPECT_EQ(j["verdict"], "corrupt");
  EXPECT_EQ(j["meets_expectation"], true);
  EXPECT_DOUBLE_EQ(j["tolerance"].get<double>(), 0.02);
  EXPECT_EQ(j["reference_mode"], "full");
  EXPECT_FALSE(j.contains("reference_sampled_requests")) << "full mode: no sample size";
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 0.5);
  ASSERT_EQ(j["epochs"].size(), 2u);
}

TEST(ResultJson, EpochFields) {
  json e = to_json(test::sample_result())["epochs"][0];
  EXPECT_EQ(e["epoch"], 1);
  EXPECT_EQ(e["requests"], 8);
  EXPECT_EQ(e["checked_requests"], 8);
  EXPECT_EQ(e["clean_requests"], 8);
  EXPECT_DOUBLE_EQ(e["clean_request_fraction"].get<double>(), 1.0);
  EXPECT_EQ(e["nonfinite_outputs"], 0);
  EXPECT_DOUBLE_EQ(e["max_rel_error"].get<double>(), 0.0031);
  EXPECT_TRUE(e["first_bad_step"].is_null());
  EXPECT_EQ(e["steps"], 41);
  EXPECT_EQ(e["graph_replays"], 30);
  EXPECT_EQ(e["preemptions"], 2);
  EXPECT_EQ(e["tokens"], 300);
  EXPECT_EQ(e["prefix_hit_blocks"], 5);
  EXPECT_EQ(e["blocks_allocated"], 77);
  EXPECT_EQ(e["peak_cached_tokens"], 1234);
  EXPECT_DOUBLE_EQ(e["seconds"].get<double>(), 0.0123);
  EXPECT_DOUBLE_EQ(e["check_seconds"].get<double>(), 0.004);
  EXPECT_DOUBLE_EQ(e["forward_seconds"].get<double>(), 0.0061);
  EXPECT_DOUBLE_EQ(e["zero_init_seconds"].get<double>(), 0.0);

  json bad = to_json(test::sample_result())["epochs"][1];
  EXPECT_EQ(bad["first_bad_step"], 7);
  EXPECT_EQ(bad["nonfinite_outputs"].get<int64_t>(), 123456789012);
  EXPECT_EQ(bad["max_rel_error"], "nan");
}

TEST(ResultJson, SampledReferenceSaysHowManyRequestsWereChecked) {
  RunResult r = test::sample_result();
  r.reference_mode = ReferenceMode::sampled;
  r.reference_sampled_requests = 4;
  for (auto& e : r.epochs) e.checked_requests = 4;
  const json j = to_json(r);
  EXPECT_EQ(j["reference_mode"], "sampled");
  EXPECT_EQ(j["reference_sampled_requests"], 4);
  for (const auto& e : j["epochs"]) {
    EXPECT_EQ(e["checked_requests"], 4);
    EXPECT_EQ(e["requests"], 8);
  }
}

TEST(ResultJson, FailureFields) {
  json f = to_json(test::sample_result())["first_failure"];
  EXPECT_EQ(f["epoch"], 2);
  EXPECT_EQ(f["step"], 7);
  EXPECT_EQ(f["request"], 3);
  EXPECT_EQ(f["position"], 17);
  EXPECT_EQ(f["layer"], 0);
  EXPECT_EQ(f["head"], 1);
  EXPECT_EQ(f["site"], "decode");
  EXPECT_EQ(f["ops"], json::array({"fill_blocks", "write_kv", "paged_decode"}));
  EXPECT_FALSE(f.contains("op"));
  EXPECT_EQ(f["check"], "nonfinite");
  EXPECT_EQ(f["value"], "nan");
  EXPECT_DOUBLE_EQ(f["tolerance"].get<double>(), 0.02);
  EXPECT_EQ(f["padded_batch"], true);
  EXPECT_EQ(f["detail"], "row 3 of a replay padded to 4");
}

TEST(ResultJson, NoFailureIsNull) {
  RunResult r = test::sample_result();
  r.first_failure.reset();
  r.verdict = Verdict::clean;
  json j = to_json(r);
  EXPECT_TRUE(j["first_failure"].is_null());
  EXPECT_EQ(j["verdict"], "clean");
  EXPECT_EQ(j["meets_expectation"], false);  // corrupt was expected
}

TEST(ResultJson, NonFiniteNumbersAreStringsAndTheDocumentReparses) {
  RunResult r = test::sample_result();
  r.tolerance = std::numeric_limits<double>::infinity();
  r.seconds = -std::numeric_limits<double>::infinity();
  r.epochs[0].check_seconds = std::numeric_limits<double>::quiet_NaN();
  r.epochs[0].first_bad_step = 0;  // the only legitimate nulls left would be these two
  r.device_info->gpu = test::sample_gpu();
  json doc = to_json(r);
  doc.erase("build");  // its "cuda" is null in a host-only build: a null that is no number
  const std::string text = dump_result(doc);
  EXPECT_EQ(text.find("null"), std::string::npos) << "no non-finite number may become null";
  EXPECT_EQ(text.back(), '\n');
  json back = json::parse(text);  // throws on invalid JSON
  EXPECT_EQ(back["tolerance"], "inf");
  EXPECT_EQ(back["seconds"], "-inf");
  EXPECT_EQ(back["epochs"][0]["check_seconds"], "nan");
  EXPECT_EQ(back["epochs"][1]["max_rel_error"], "nan");
}

TEST(Format, JsonNumber) {
  EXPECT_EQ(json_number(1.5), json(1.5));
  EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), json("nan"));
  EXPECT_EQ(json_number(-std::numeric_limits<double>::quiet_NaN()), json("nan"));
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), json("inf"));
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), json("-inf"));
}

TEST(Format, HumanSpellings) {
  EXPECT_EQ(format_error_value(0.0031), "3.10e-03");
  EXPECT_EQ(format_error_value(0.0), "0");
  EXPECT_EQ(format_error_value(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_percent(0.875), "87.5%");
  EXPECT_EQ(format_duration(0.0005), "500 us");
  EXPECT_EQ(format_duration(0.0123), "12.3 ms");
  EXPECT_EQ(format_duration(2.5), "2.500 s");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(12.0 * (1 << 20)), "12.0 MiB");
  EXPECT_EQ(format_bytes(1.5 * (1 << 30)), "1.50 GiB");
  EXPECT_EQ(format_bytes(2.0 * (int64_t{1} << 50)), "2.0 PiB");
  EXPECT_EQ(format_count(950), "950");
  EXPECT_EQ(format_count(12'345), "12.3 k");
  EXPECT_EQ(format_count(4'560'000), "4.56 M");
  EXPECT_EQ(format_count(780e9), "780 G");
}

TEST(ResultJson, AnErrorVerdictCarriesItsErrorBlockAndNeverMeetsTheExpectation) {
  RunResult r = test::sample_result();
  EXPECT_FALSE(to_json(r).contains("error"));
  r.verdict = Verdict::error;
  r.first_failure.reset();
  r.error = RunError{.kind = RunErrorKind::crash, .op = "write_kv", .epoch = 2, .step = 5,
                     .layer = 1, .layer_kind = "mla", .signal = "SIGSEGV", .exit_code = 0, .message = "backend op write_kv crashed"};
  for (Expectation x : {Expectation::clean, Expectation::corrupt}) {
    r.expected = x;
    const json doc = to_json(r);
    EXPECT_EQ(doc["verdict"], "error");
    EXPECT_EQ(doc["meets_expectation"], false);
  }
  const json e = to_json(r)["error"];
  EXPECT_EQ(e, (json{{"kind", "crash"}, {"op", "write_kv"}, {"epoch", 2}, {"step", 5},
                     {"layer", 1}, {"layer_kind", "mla"}, {"signal", "SIGSEGV"}, {"message", "backend op write_kv crashed"}}));
  r.error->kind = RunErrorKind::exit;
  r.error->op = "";  // outside any backend call
  EXPECT_TRUE(to_json(r)["error"]["op"].is_null());
  EXPECT_EQ(to_json(r)["error"]["exit_code"], 0);
  EXPECT_FALSE(to_json(r)["error"].contains("signal"));
}

TEST(ResultJson, DeviceInfoOnTheHostHasTheCpuAndNoGpu) {
  const json d = to_json(test::sample_result())["device_info"];
  EXPECT_EQ(d, json({{"kind", "host"},
                     {"cpu_model", "Sample CPU 9000"},
                     {"hardware_threads", 48},
                     {"gpu", nullptr}}));
  RunResult unreadable = test::sample_result();
  unreadable.device_info->cpu_model.reset();
  EXPECT_TRUE(to_json(unreadable)["device_info"]["cpu_model"].is_null());
}

TEST(ResultJson, DeviceInfoOnTheCudaDeviceHasTheGpuAndItsVersions) {
  RunResult r = test::sample_result();
  r.device = "cuda";
  r.device_info->kind = "cuda";
  r.device_info->gpu = test::sample_gpu();
  const json d = to_json(r)["device_info"];
  EXPECT_EQ(d["kind"], "cuda");
  EXPECT_EQ(d["hardware_threads"], 48);
  EXPECT_EQ(d["gpu"], json({{"ordinal", 1},
                            {"name", "NVIDIA H100 80GB HBM3"},
                            {"compute_capability", "9.0"},
                            {"total_memory_bytes", 85'017'821'184ull},
                            {"sm_count", 132},
                            {"cuda_runtime_version", "13.0"},
                            {"cuda_driver_version", "13.1"},
                            {"nvidia_driver_version", "580.159.04"}}));
  r.device_info->gpu->nvidia_driver_version.reset();
  EXPECT_TRUE(to_json(r)["device_info"]["gpu"]["nvidia_driver_version"].is_null());
}

// A run whose worker died on a GPU: the parent process never saw the device.
TEST(ResultJson, UnknownDeviceInfoIsNull) {
  RunResult r = test::sample_result();
  r.device_info.reset();
  const json j = to_json(r);
  ASSERT_TRUE(j.contains("device_info"));
  EXPECT_TRUE(j["device_info"].is_null());
}

}  // namespace
}  // namespace kv
