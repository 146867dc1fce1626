// The warp intrinsics of codegen/cuda/kernels/warp.cuh, checked two ways without a GPU.
//
// Emulation: small test kernels, built exactly as the generated kernels are (the kernel files
// inlined into one source, compiled by the host compiler against the SIMT shim), run on one
// warp and are compared with a scalar reference: a 16x16 bf16 A times a 16x8 bf16 B plus an
// fp32 C, for random inputs, with the fragments built by the documented per-lane layout and
// loaded through cp.async and ldmatrix from shared memory; every ldmatrix form's registers
// against the PTX ISA's layout; cp.async's group semantics; ld128/st128 and their alignment.
// mma results are compared with a tolerance of 4 ulp of the sum of the terms' magnitudes: a
// product of bf16 is exact in fp32 and the emulation rounds the sum once, but the hardware's
// summation order is not specified, and kernels must not depend on it.
//
// PTX: the same source compiled by NVRTC for sm_80 and sm_90 issues the instructions, and
// ptxas reports no spills for any test kernel.
#include "codegen/cuda/nvrtc.h"
#include "runtime/ptx_stats.h"
#include "runtime/safetensors.h"
#include "test/simt/simt_device.h"
#include "test/simt/simt_runtime.h"
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <sstream>

namespace cbc::test {
namespace {

// A 128-bit vector as the kernels' uint4 holds it.
struct alignas(16) Vec4 {
  unsigned x, y, z, w;
};

// One kernel file with its includes of other kernel files inlined, each once, as the emitter
// assembles a generated source.
void inlineKernelFile(const std::string &rel, std::set<std::string> &done, std::string &out) {
  if (!done.insert(rel).second)
    return;
  std::istringstream in(readFile(sourceDir() + "/" + rel));
  std::string line;
  const std::string prefix = "#include \"codegen/cuda/kernels/";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0 && line.back() == '"') {
      inlineKernelFile(line.substr(10, line.size() - 11), done, out);
      continue;
    }
    out += line + "\n";
  }
}

// The test kernels: each takes CbcArgs as the generated kernels do.
const char *kKernels = R"cuda(
namespace cbc {
// Lane (g, t)'s fragments of a row-major 16x16 A and a K x N (16x8, row-major) B, element by
// element as the PTX ISA lays them out.
__device__ void load_fragments(const bf16 *A, const bf16 *B, unsigned a[4], unsigned b[2]) {
  int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    a[r] = bf16_bits(A[row * 16 + col]) | (bf16_bits(A[row * 16 + col + 1]) << 16);
  }
  for (int r = 0; r < 2; ++r) {
    int k = 2 * t + 8 * r;
    b[r] = bf16_bits(B[k * 8 + g]) | (bf16_bits(B[(k + 1) * 8 + g]) << 16);
  }
}
__device__ void load_acc(const float *C, float c[4]) {
  int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i)
    c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
}
__device__ void store_acc(float *D, const float d[4]) {
  int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i)
    D[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
}
} // namespace cbc

// p: A (16x16 bf16), B (16x8 bf16, K x N), C (16x8 f32), D (16x8 f32).
extern "C" __global__ void cbc_test_mma_layout(CbcArgs args) {
  unsigned a[4], b[2];
  float acc[4];
  cbc::load_fragments((const bf16 *)args.p[0], (const bf16 *)args.p[1], a, b);
  cbc::load_acc((const float *)args.p[2], acc);
  cbc::mma_m16n8k16_bf16(acc, a, b, acc);
  cbc::store_acc((float *)args.p[3], acc);
}

// p: A, B (K x N), Bt (N x K, the same B column-major), C, D through ldmatrix.x2.trans of B,
// D through ldmatrix.x2 of Bt. The tiles reach shared memory by cp.async.
extern "C" __global__ void cbc_test_mma_ldmatrix(CbcArgs args) {
  __shared__ uint4 sA[32], sB[16], sBt[16];
  int lane = threadIdx.x & 31;
  cbc::cp_async16(&sA[lane], (const uint4 *)args.p[0] + lane);
  if (lane < 16)
    cbc::cp_async16_ca(&sB[lane], (const uint4 *)args.p[1] + lane);
  else
    cbc::cp_async16(&sBt[lane - 16], (const uint4 *)args.p[2] + (lane - 16));
  cbc::cp_async_commit();
  cbc::cp_async_wait<0>();
  __syncthreads();
  const bf16 *A = (const bf16 *)sA, *B = (const bf16 *)sB, *Bt = (const bf16 *)sBt;
  unsigned a[4], b[2], bt[2];
  // Matrices: A rows 0-7 and 8-15 at columns 0-7, then the same at columns 8-15.
  cbc::ldmatrix_x4(a, A + (lane % 16) * 16 + (lane / 16) * 8);
  // B's rows k 0-7 and 8-15, transposed; Bt's rows n 0-7 at k 0-7 and at k 8-15.
  cbc::ldmatrix_x2_trans(b, B + (lane % 16) * 8);
  cbc::ldmatrix_x2(bt, Bt + (lane % 8) * 16 + ((lane / 8) % 2) * 8);
  float c[4], d[4];
  cbc::load_acc((const float *)args.p[3], c);
  cbc::mma_m16n8k16_bf16(d, a, b, c);
  cbc::store_acc((float *)args.p[4], d);
  cbc::mma_m16n8k16_bf16(d, a, bt, c);
  cbc::store_acc((float *)args.p[5], d);
}

// p: 32 rows of 8 bf16 (4 matrices), out: 6 forms x 32 lanes x 4 registers. Lane L gives the
// address of row (13 L + 7) mod 32, so that rows are not in lane order.
extern "C" __global__ void cbc_test_ldmatrix_forms(CbcArgs args) {
  __shared__ uint4 rows[32];
  int lane = threadIdx.x & 31;
  rows[lane] = ((const uint4 *)args.p[0])[lane];
  __syncthreads();
  const uint4 *mine = &rows[(13 * lane + 7) & 31];
  unsigned r[6][4] = {};
  cbc::ldmatrix_x1(r[0], mine);
  cbc::ldmatrix_x2(r[1], mine);
  cbc::ldmatrix_x4(r[2], mine);
  cbc::ldmatrix_x1_trans(r[3], mine);
  cbc::ldmatrix_x2_trans(r[4], mine);
  cbc::ldmatrix_x4_trans(r[5], mine);
  unsigned *out = (unsigned *)args.p[1];
  for (int f = 0; f < 6; ++f)
    for (int i = 0; i < 4; ++i)
      out[(f * 32 + lane) * 4 + i] = r[f][i];
}

// p: src (96 x 16 bytes), out (6 x 32 x 16 bytes): what lane L sees of its own copies.
extern "C" __global__ void cbc_test_cp_async(CbcArgs args) {
  __shared__ uint4 s[96];
  int lane = threadIdx.x & 31;
  const uint4 *src = (const uint4 *)args.p[0];
  uint4 *out = (uint4 *)args.p[1], zero = {0, 0, 0, 0};
  s[lane] = s[lane + 32] = s[lane + 64] = zero;
  __syncthreads();
  cbc::cp_async16(&s[lane], src + lane);
  cbc::cp_async_commit();
  cbc::cp_async16_ca(&s[lane + 32], src + lane + 32);
  cbc::cp_async_commit();
  out[0 * 32 + lane] = s[lane]; // before any wait: undefined on a GPU, untouched here
  cbc::cp_async_wait<1>();      // the first group has landed
  out[1 * 32 + lane] = s[lane];
  out[2 * 32 + lane] = s[lane + 32]; // the second may still be in flight
  cbc::cp_async16(&s[lane + 64], src + lane + 64); // not committed: wait_group ignores it
  cbc::cp_async_wait<0>();
  out[3 * 32 + lane] = s[lane + 32];
  out[4 * 32 + lane] = s[lane + 64];
  cbc::cp_async_commit();
  cbc::cp_async_wait<0>();
  out[5 * 32 + lane] = s[lane + 64];
}

// p: src, dst; i[0]: a byte offset into src. Lane L copies the 16 bytes at 16 L + offset.
extern "C" __global__ void cbc_test_ld128(CbcArgs args) {
  int lane = threadIdx.x & 31;
  const char *src = (const char *)args.p[0] + args.i[0];
  cbc::st128((uint4 *)args.p[1] + lane, cbc::ld128(src + 16 * lane));
}
)cuda";

const std::vector<std::string> kNames = {"cbc_test_mma_layout", "cbc_test_mma_ldmatrix", "cbc_test_ldmatrix_forms",
                                         "cbc_test_cp_async", "cbc_test_ld128"};

const std::string &testSource() {
  static const std::string source = [] {
    std::string out;
    std::set<std::string> done;
    inlineKernelFile("codegen/cuda/kernels/warp.cuh", done, out);
    return out + kKernels;
  }();
  return source;
}

using KernelFn = simt::KernelFn;

KernelFn kernel(const std::string &name) {
  static void *lib = [] {
    std::string so = simt::buildKernelLibrary(testSource(), CBC_SIMT_CACHE_DIR);
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h)
      throw std::runtime_error(std::string("cannot load the test kernels: ") + dlerror());
    return h;
  }();
  void *sym = dlsym(lib, name.c_str());
  if (!sym)
    throw std::runtime_error("no kernel " + name);
  return reinterpret_cast<KernelFn>(sym);
}

void runWarp(const std::string &name, const CbcArgs &args) {
  const uint32_t grid[3] = {1, 1, 1};
  simt::launch(kernel(name), grid, 32, args);
}

CbcArgs argsOf(std::initializer_list<void *> ptrs) {
  CbcArgs a{};
  int n = 0;
  for (void *p : ptrs)
    a.p[n++] = p;
  return a;
}

uint16_t bf16Of(float v) { return rt::floatToBf16(v); }
float floatOf(uint16_t b) { return rt::bf16ToFloat(b); }

// Random bf16 operands (in [-2, 2]), an fp32 accumulator, and the reference D = A B + C in
// double from the bf16 values, with the sum of the terms' magnitudes for the tolerance.
struct MmaCase {
  alignas(16) uint16_t A[16 * 16], B[16 * 8], Bt[8 * 16];
  float C[16 * 8];
  double ref[16 * 8], mag[16 * 8];
};

MmaCase makeCase(unsigned seed) {
  MmaCase m;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (uint16_t &x : m.A)
    x = bf16Of(u(rng));
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n)
      m.Bt[n * 16 + k] = m.B[k * 8 + n] = bf16Of(u(rng));
  for (float &c : m.C)
    c = u(rng) * 4.0f;
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      double s = m.C[i * 8 + n], a = std::fabs(s);
      for (int k = 0; k < 16; ++k) {
        double p = (double)floatOf(m.A[i * 16 + k]) * floatOf(m.B[k * 8 + n]);
        s += p, a += std::fabs(p);
      }
      m.ref[i * 8 + n] = s, m.mag[i * 8 + n] = a;
    }
  return m;
}

void expectMatches(const MmaCase &m, const float *D, const std::string &what) {
  for (int e = 0; e < 16 * 8; ++e)
    ASSERT_LE(std::fabs(D[e] - m.ref[e]), 4 * std::ldexp(m.mag[e], -23))
        << what << ": D[" << e / 8 << "][" << e % 8 << "] = " << D[e] << ", reference " << m.ref[e];
}

TEST(WarpMma, DocumentedFragmentLayoutGivesABPlusC) {
  for (unsigned seed = 1; seed <= 8; ++seed) {
    MmaCase m = makeCase(seed);
    float D[16 * 8] = {};
    runWarp("cbc_test_mma_layout", argsOf({m.A, m.B, m.C, D}));
    expectMatches(m, D, "seed " + std::to_string(seed));
  }
}

TEST(WarpMma, FragmentsThroughCpAsyncAndLdmatrixGiveABPlusC) {
  for (unsigned seed = 11; seed <= 18; ++seed) {
    MmaCase m = makeCase(seed);
    float viaB[16 * 8] = {}, viaBt[16 * 8] = {};
    runWarp("cbc_test_mma_ldmatrix", argsOf({m.A, m.B, m.Bt, m.C, viaB, viaBt}));
    expectMatches(m, viaB, "ldmatrix.x4 A, ldmatrix.x2.trans B, seed " + std::to_string(seed));
    expectMatches(m, viaBt, "ldmatrix.x4 A, ldmatrix.x2 Bt, seed " + std::to_string(seed));
  }
}

// Exact products and one rounding: D is the correctly rounded A B + C whenever the double sum
// is exact, as it is for these small-integer operands, so ties and cancellation come out exact.
TEST(WarpMma, IntegerOperandsAreExact) {
  MmaCase m = makeCase(5);
  for (int i = 0; i < 256; ++i)
    m.A[i] = bf16Of((float)((i * 7) % 9 - 4));
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n)
      m.B[k * 8 + n] = bf16Of((float)((k + 3 * n) % 5 - 2));
  float D[16 * 8] = {};
  for (float &c : m.C)
    c = 1000.0f;
  runWarp("cbc_test_mma_layout", argsOf({m.A, m.B, m.C, D}));
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      float want = 1000.0f;
      for (int k = 0; k < 16; ++k)
        want += floatOf(m.A[i * 16 + k]) * floatOf(m.B[k * 8 + n]);
      EXPECT_EQ(D[i * 8 + n], want) << i << "," << n;
    }
}

TEST(WarpLdmatrix, EveryFormFollowsThePtxLayout) {
  alignas(16) uint16_t rows[32 * 8];
  for (int i = 0; i < 32 * 8; ++i)
    rows[i] = (uint16_t)(0x1000 + i); // row i / 8, column i % 8: distinct, never zero
  std::vector<unsigned> out(6 * 32 * 4, 0);
  runWarp("cbc_test_ldmatrix_forms", argsOf({rows, out.data()}));
  // Row j of matrix i is the row lane 8 i + j addressed.
  auto element = [&](int matrix, int row, int col) -> unsigned {
    int lane = 8 * matrix + row;
    return rows[((13 * lane + 7) & 31) * 8 + col];
  };
  const int counts[6] = {1, 2, 4, 1, 2, 4};
  for (int f = 0; f < 6; ++f)
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        int g = lane / 4, t = lane % 4;
        unsigned want = 0;
        if (i < counts[f])
          want = f < 3 ? element(i, g, 2 * t) | element(i, g, 2 * t + 1) << 16
                       : element(i, 2 * t, g) | element(i, 2 * t + 1, g) << 16;
        EXPECT_EQ(out[(f * 32 + lane) * 4 + i], want) << "form " << f << " lane " << lane << " register " << i;
      }
}

TEST(WarpCpAsync, CopiesLandAtTheWaitThatCoversTheirGroup) {
  std::vector<Vec4> src(96), out(6 * 32);
  for (unsigned i = 0; i < 96; ++i)
    src[i] = {i + 1, 0x100 + i, 0x200 + i, 0x300 + i};
  runWarp("cbc_test_cp_async", argsOf({src.data(), out.data()}));
  auto same = [](const Vec4 &a, const Vec4 &b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; };
  const Vec4 zero = {0, 0, 0, 0};
  for (int lane = 0; lane < 32; ++lane) {
    // The emulation performs copies at the wait: before it the destination is untouched.
    EXPECT_TRUE(same(out[0 * 32 + lane], zero)) << lane;
    EXPECT_TRUE(same(out[1 * 32 + lane], src[lane])) << "wait_group 1 completes the older group, lane " << lane;
    EXPECT_TRUE(same(out[2 * 32 + lane], zero)) << "wait_group 1 leaves the newest group, lane " << lane;
    EXPECT_TRUE(same(out[3 * 32 + lane], src[lane + 32])) << "wait_group 0, lane " << lane;
    EXPECT_TRUE(same(out[4 * 32 + lane], zero)) << "an uncommitted copy is not waited for, lane " << lane;
    EXPECT_TRUE(same(out[5 * 32 + lane], src[lane + 64])) << "committed, then waited, lane " << lane;
  }
}

TEST(WarpLoads, Ld128AndSt128MoveSixteenBytes) {
  std::vector<Vec4> src(33), dst(32);
  for (unsigned i = 0; i < 33; ++i)
    src[i] = {4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3};
  CbcArgs a = argsOf({src.data(), dst.data()});
  a.i[0] = 16; // aligned: one vector further on
  runWarp("cbc_test_ld128", a);
  for (unsigned i = 0; i < 32; ++i) {
    EXPECT_EQ(dst[i].x, 4 * (i + 1)) << i;
    EXPECT_EQ(dst[i].w, 4 * (i + 1) + 3) << i;
  }
}

TEST(WarpLoadsDeathTest, MisalignedLd128Faults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<Vec4> src(33), dst(32);
  CbcArgs a = argsOf({src.data(), dst.data()});
  a.i[0] = 8;
  EXPECT_DEATH(runWarp("cbc_test_ld128", a), "ld128: the address is not 16-byte aligned");
}

// NVRTC compiles the same kernels for both targets into the PTX instructions the wrappers
// stand for, and ptxas spills nothing.
TEST(WarpPtx, NvrtcIssuesTheInstructionsForSm80AndSm90) {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    codegen::NvrtcOptions o;
    o.targets = {arch};
    codegen::KernelBundleOut bundle;
    codegen::compileKernels(testSource(), kNames, o, bundle);
    const std::string &ptx = bundle.ptx;
    for (const char *insn :
         {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
          "ldmatrix.sync.aligned.m8n8.x2.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
          "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
          "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "cp.async.cg.shared.global", "cp.async.ca.shared.global",
          "cp.async.commit_group", "cp.async.wait_group 1", "cp.async.wait_group 0", "ld.global.nc.v4.u32",
          "st.global.v4.u32"})
      EXPECT_NE(ptx.find(insn), std::string::npos) << arch << " PTX lacks " << insn;
    ASSERT_EQ(bundle.cubins.size(), 1u);
    const codegen::KernelImageOut &img = bundle.cubins[0];
    for (size_t k = 0; k < kNames.size(); ++k) {
      EXPECT_EQ(img.spills[k], 0) << arch << " " << kNames[k];
      EXPECT_GT(img.registers[k], 0) << arch << " " << kNames[k];
    }
  }
}

// The counts `cbc dump --kernels` prints (runtime/ptx_stats.h), on the PTX NVRTC really emits:
// each test kernel's tensor-core, ldmatrix, cp.async and 128-bit global load instructions are
// found in it and in no kernel that lacks them.
TEST(WarpPtx, InstructionCountsFindEachWrapperInItsKernel) {
  for (const std::string arch : {"sm_80", "sm_90"}) {
    codegen::NvrtcOptions o;
    o.targets = {arch};
    codegen::KernelBundleOut bundle;
    codegen::compileKernels(testSource(), kNames, o, bundle);
    std::map<std::string, rt::PtxCounts> c = rt::ptxInstructionCounts(bundle.ptx);
    ASSERT_EQ(c.size(), kNames.size()) << arch;
    EXPECT_EQ(c["cbc_test_mma_layout"].mma, 1) << arch;
    EXPECT_EQ(c["cbc_test_mma_layout"].ldmatrix + c["cbc_test_mma_layout"].cp_async, 0) << arch;
    EXPECT_EQ(c["cbc_test_mma_ldmatrix"].mma, 2) << arch;
    EXPECT_EQ(c["cbc_test_mma_ldmatrix"].ldmatrix, 3) << arch;
    EXPECT_EQ(c["cbc_test_mma_ldmatrix"].cp_async, 3) << arch;
    EXPECT_EQ(c["cbc_test_ldmatrix_forms"].ldmatrix, 6) << arch;
    EXPECT_EQ(c["cbc_test_ldmatrix_forms"].mma, 0) << arch;
    EXPECT_EQ(c["cbc_test_cp_async"].cp_async, 3) << arch;
    EXPECT_EQ(c["cbc_test_cp_async"].mma + c["cbc_test_cp_async"].ldmatrix, 0) << arch;
    EXPECT_EQ(c["cbc_test_ld128"].ld128, 1) << arch;
    EXPECT_EQ(c["cbc_test_ld128"].mma + c["cbc_test_ld128"].ldmatrix + c["cbc_test_ld128"].cp_async, 0) << arch;
  }
}

} // namespace
} // namespace cbc::test
