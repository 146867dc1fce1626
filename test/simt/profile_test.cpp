// The per-launch timing path of cbc-gpu-check (tools/gpu_check/launch_profile.h) on the SIMT
// device: the llama fixture's steps run launch by launch with a timestamp after each, the CSV
// names every issued launch with the artefact's kernels, and bench/roofline.py joins it to its
// prediction. Host time on the emulated device says nothing about a GPU: only the path, the
// CSV's shape and the join are checked here.
#include "driver/compile.h"
#include "runtime/cuda/gpu_backend.h"
#include "test/simt/simt_device.h"
#include "test/support/compile_support.h"
#include "tools/gpu_check/launch_profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace cbc::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> splitCsv(const std::string &line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ','))
    out.push_back(field);
  if (!line.empty() && line.back() == ',')
    out.push_back(""); // an empty last field
  return out;
}

std::string run(const std::string &cmd, int &status) {
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  status = p ? pclose(p) : -1;
  return out;
}

struct Profiled {
  rt::Artefact artefact;
  std::string path;
  std::vector<gpu_check::LaunchProfile> profiles;
};

// Decode steps of 2 requests with 8 cached tokens each, and a 16-token prefill, on the fixture.
Profiled profileLlama(const fs::path &dir) {
  driver::CompileOptions o;
  o.emit_cuda = true;
  o.kernel_cache_dir = std::string(CBC_SIMT_CACHE_DIR) + "/nvrtc";
  auto r = driver::compileConfig(readFile(fixtureDir("llama") + "/config.json"), o);
  Profiled p{rt::Artefact::fromBytes(r.artefact.data(), r.artefact.size()), (dir / "llama.fb").string(), {}};
  std::ofstream(p.path, std::ios::binary).write((const char *)r.artefact.data(), (std::streamsize)r.artefact.size());
  rt::EngineOptions eo;
  eo.max_batch_tokens = 64;
  eo.max_requests = 8;
  eo.max_live_requests = 8;
  eo.cache_memory_bytes = 16 << 20;
  eo.threads = 1;
  auto backend = rt::makeGpuBackend(p.artefact, rt::WeightSource{fixtureDir("llama"), 0},
                                    simt::makeSimtDevice(CBC_SIMT_CACHE_DIR), {64, 8});
  p.profiles = gpu_check::profileLaunches(p.artefact, std::move(backend), eo,
                                          {{true, 2, 8, 1, 3}, {false, 1, 0, 16, 2}});
  return p;
}

TEST(LaunchProfile, SimtStepsAreTimedLaunchByLaunchAndTheRooflineJoinsThem) {
  fs::path dir = fs::path(testing::TempDir()) / ("cbc-profile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Profiled p = profileLlama(dir);
  const rt::KernelBundle &k = p.artefact.kernels.value();
  ASSERT_EQ(p.profiles.size(), 2u);
  EXPECT_EQ(p.profiles[0].workload.name(), "decode-2x8");
  EXPECT_EQ(p.profiles[1].workload.name(), "prefill-16");
  // Every profiled step issued the same launches: each launch in all of them, except that decode
  // steps leave out the launches sized by the step's prefill tiles (0 there: the tiled prefill
  // attention and its plan). Every GEMM was timed.
  for (const auto &prof : p.profiles) {
    int64_t steps = prof.workload.steps;
    bool decode = prof.workload.name().rfind("decode", 0) == 0;
    EXPECT_EQ(prof.times.steps, steps) << prof.workload.name();
    ASSERT_EQ(prof.times.calls.size(), k.launches.size());
    int64_t prefillOnly = 0;
    for (size_t li = 0; li < k.launches.size(); ++li) {
      bool byTiles = false;
      for (const rt::GridDim &g : k.launches[li].grid)
        byTiles |= g.var == RuntimeVar::PrefillTiles;
      prefillOnly += byTiles;
      EXPECT_EQ(prof.times.calls[li], decode && byTiles ? 0 : steps) << prof.workload.name() << " launch " << li;
      EXPECT_GE(prof.times.ms[li], 0.0);
      if (k.launches[li].gemm)
        EXPECT_FALSE(byTiles) << "GEMM launch " << li;
    }
    EXPECT_GT(prefillOnly, 0) << "the llama fixture has tiled prefill attention";
  }
  // The CSV: one row per issued launch, named as the artefact names it.
  fs::path csv = dir / "llama.launches.csv";
  {
    std::ofstream out(csv);
    gpu_check::writeLaunchCsv(out, p.artefact, p.profiles);
  }
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "workload,requests,tokens,context,launch,instr,kernel,calls,mean_us");
  std::map<std::string, int> rows;
  while (std::getline(in, line)) {
    auto f = splitCsv(line);
    ASSERT_EQ(f.size(), 9u) << line;
    const rt::Launch &l = k.launches.at(std::stoul(f[4]));
    EXPECT_EQ(f[5], std::to_string(l.instr)) << line;
    EXPECT_EQ(f[6], l.gemm ? "gemm" : k.names.at(l.kernel)) << line;
    EXPECT_GE(std::stod(f[8]), 0.0) << line;
    ++rows[f[0]];
  }
  EXPECT_GT(rows["decode-2x8"], 0);
  EXPECT_GT(rows["prefill-16"], 0);
  // The roofline joins it: every instruction group with a launch has a measured time.
  int status = 0;
  std::string out = run("python3 " + std::string(CBC_SOURCE_DIR) + "/bench/roofline.py " + p.path + " --cbc " +
                            CBC_EXE + " --workload decode:2:8 --workload prefill:16 --csv --measured " + csv.string(),
                        status);
  ASSERT_EQ(status, 0) << out;
  std::istringstream table(out);
  std::getline(table, line);
  auto head = splitCsv(line);
  ASSERT_EQ(head.size(), 13u) << line;
  EXPECT_EQ(head[4], "kernels");
  EXPECT_EQ(head.back(), "measured_us");
  std::map<std::string, int> joined, steps;
  while (std::getline(table, line)) {
    auto f = splitCsv(line);
    ASSERT_EQ(f.size(), 13u) << line;
    if (f[2] == "step") {
      ++steps[f[1]];
      EXPECT_GT(std::stod(f[10]), 0.0) << line;
      continue;
    }
    if (f[4] != "-") { // the group has launches: it was measured
      EXPECT_FALSE(f[12].empty()) << "no measured time joined: " << line;
      ++joined[f[1]];
    }
  }
  EXPECT_EQ(steps["decode-2x8"], 1);
  EXPECT_EQ(steps["prefill-16"], 1);
  EXPECT_GT(joined["decode-2x8"], 3);
  EXPECT_GT(joined["prefill-16"], 3);
  // The Markdown form prints the measured columns and the measured step.
  std::string md = run("python3 " + std::string(CBC_SOURCE_DIR) + "/bench/roofline.py " + p.path + " --cbc " + CBC_EXE +
                           " --workload decode:2:8 --measured " + csv.string(),
                       status);
  ASSERT_EQ(status, 0) << md;
  EXPECT_NE(md.find("| measured µs each | measured / predicted |"), std::string::npos) << md;
  EXPECT_NE(md.find("measured step (sum of the launches' mean times): "), std::string::npos) << md;
  fs::remove_all(dir);
}

} // namespace
} // namespace cbc::test
