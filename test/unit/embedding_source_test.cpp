// The embeddings of a request line, read and placed (runtime/embedding_source.h): .npy and
// .safetensors files and inline values become rows of the model's width at their "start" or on
// the runs of the request's placeholder id; every bad segment is a reason naming it and its
// field, never an exception.
#include "runtime/embedding_source.h"
#include "runtime/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace cbc::test {
namespace {

namespace fs = std::filesystem;

class TempDir {
public:
  TempDir() {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("cbc-unit-" + std::string(info->test_suite_name()) + "-" +
                                         info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string &name) const { return (path_ / name).string(); }

private:
  fs::path path_;
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), (std::streamsize)bytes.size());
}

template <typename T> std::string bytesOf(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

// A version 1.0 .npy with this dtype, order and shape text, padded as numpy pads it.
std::string npy(const std::string &descr, const std::string &shape, const std::string &data, bool fortran = false) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += (char)(header.size() & 0xff);
  out += (char)(header.size() >> 8);
  return out + header + data;
}

// A safetensors file of one or more tensors of any dtype name.
std::string safetensors(const std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, std::string>> &ts) {
  nlohmann::json h = nlohmann::json::object();
  std::string data;
  for (const auto &[name, dtype, shape, bytes] : ts) {
    h[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
  }
  std::string header = h.dump();
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::vector<float> iota(size_t n, float from = 0.5f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = from + (float)i;
  return v;
}

rt::PendingSegment inline_(std::vector<float> values, int64_t start = -1) {
  rt::PendingSegment s;
  s.values = std::make_shared<const std::vector<float>>(std::move(values));
  s.start = start;
  return s;
}

rt::PendingSegment file(const std::string &path, int64_t start = -1, const std::string &tensor = "") {
  rt::PendingSegment s;
  s.file = path;
  s.tensor = tensor;
  s.start = start;
  return s;
}

void expectReason(const std::string &why, const std::vector<std::string> &mentions) {
  ASSERT_FALSE(why.empty()) << "accepted";
  for (const std::string &m : mentions)
    EXPECT_NE(why.find(m), std::string::npos) << "'" << why << "' lacks '" << m << "'";
}

TEST(EmbeddingSource, InlineValuesArePlacedByStart) {
  std::vector<rt::EmbeddingSegment> out;
  rt::PendingSegment a = inline_(iota(8), 1), b = inline_(iota(4, 9), 6);
  b.grid[0] = 1, b.grid[1] = 1, b.grid[2] = 1;
  ASSERT_EQ(rt::resolveEmbeddings({a, b}, -1, {0, 1, 2, 3, 4, 5, 6}, 4, out), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].start, 1);
  EXPECT_EQ(out[0].rows, 2);
  EXPECT_EQ(out[0].data, a.values); // shared, not copied
  EXPECT_EQ(out[1].start, 6);
  EXPECT_EQ(out[1].rows, 1);
  EXPECT_EQ(out[1].grid[2], 1);
  // No segments and no placeholder: nothing, whatever the width.
  EXPECT_EQ(rt::resolveEmbeddings({}, -1, {1, 2}, 0, out), "");
  EXPECT_TRUE(out.empty());
}

TEST(EmbeddingSource, PlaceholderRunsPlaceTheSegmentsInOrder) {
  EXPECT_EQ(rt::placeholderRuns({7, 7, 1, 7, 2, 7, 7, 7}, 7),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {3, 1}, {5, 3}}));
  std::vector<rt::EmbeddingSegment> out;
  std::vector<int32_t> prompt = {1, 9, 9, 2, 3, 9, 9, 9};
  ASSERT_EQ(rt::resolveEmbeddings({inline_(iota(4)), inline_(iota(6))}, 9, prompt, 2, out), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].start, 1);
  EXPECT_EQ(out[0].rows, 2);
  EXPECT_EQ(out[1].start, 5);
  EXPECT_EQ(out[1].rows, 3);

  expectReason(rt::resolveEmbeddings({inline_(iota(4))}, 9, prompt, 2, out),
               {"\"embeds\" has 1 segment but the prompt has 2 runs of \"placeholder\" 9 (at rows 1, 5)"});
  expectReason(rt::resolveEmbeddings({inline_(iota(4)), inline_(iota(6))}, 8, prompt, 2, out),
               {"\"embeds\" has 2 segments but the prompt has 0 runs of \"placeholder\" 8"});
  expectReason(rt::resolveEmbeddings({}, 9, prompt, 2, out), {"has 0 segments but the prompt has 2 runs"});
  expectReason(rt::resolveEmbeddings({inline_(iota(4)), inline_(iota(4))}, 9, prompt, 2, out),
               {"\"embeds[1]\" has 2 rows (4 values of width 2) but run 1 of \"placeholder\" 9 (prompt rows 5 to 8) has 3"});
  // A placeholder absent from the prompt and no segments: nothing to place.
  EXPECT_EQ(rt::resolveEmbeddings({}, 5, prompt, 2, out), "");
}

TEST(EmbeddingSource, ValuesMustBeWholeRowsOfAModelThatTakesThem) {
  std::vector<rt::EmbeddingSegment> out;
  expectReason(rt::resolveEmbeddings({inline_(iota(4), 0)}, -1, {1, 2}, 0, out),
               {"\"embeds\" given, but this model takes no embeddings"});
  expectReason(rt::resolveEmbeddings({inline_(iota(4), 0), inline_(iota(5), 1)}, -1, {1, 2}, 2, out),
               {"\"embeds[1]\" holds 5 values, not a whole number of rows of the model's embedding width 2"});
  expectReason(rt::resolveEmbeddings({inline_({}, 0)}, -1, {1, 2}, 2, out), {"\"embeds[0]\" holds no values"});
}

TEST(EmbeddingSource, NpyFiles) {
  TempDir dir;
  std::vector<float> v = iota(6);
  writeBytes(dir / "f32.npy", npy("<f4", "(3, 2)", bytesOf(v)));
  writeBytes(dir / "flat.npy", npy("<f4", "(6,)", bytesOf(v)));
  std::vector<double> d(v.begin(), v.end());
  writeBytes(dir / "f64.npy", npy("<f8", "(1, 3, 2)", bytesOf(d)));
  std::vector<uint16_t> h = {0x3c00, 0xc000}; // 1.0, -2.0
  writeBytes(dir / "f16.npy", npy("<f2", "(1, 2)", bytesOf(h)));
  std::vector<float> got;
  int64_t columns = -1;
  ASSERT_EQ(rt::readEmbeddingFile(dir / "f32.npy", "", got, columns), "");
  EXPECT_EQ(got, v);
  EXPECT_EQ(columns, 2);
  ASSERT_EQ(rt::readEmbeddingFile(dir / "flat.npy", "", got, columns), "");
  EXPECT_EQ(got, v);
  EXPECT_EQ(columns, 0);
  ASSERT_EQ(rt::readEmbeddingFile(dir / "f64.npy", "", got, columns), "");
  EXPECT_EQ(got, v);
  EXPECT_EQ(columns, 2);
  ASSERT_EQ(rt::readEmbeddingFile(dir / "f16.npy", "", got, columns), "");
  EXPECT_EQ(got, (std::vector<float>{1.0f, -2.0f}));

  std::vector<rt::EmbeddingSegment> out;
  ASSERT_EQ(rt::resolveEmbeddings({file(dir / "f32.npy", 0), file(dir / "flat.npy", 3)}, -1, {0, 1, 2, 3, 4, 5}, 2, out), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].rows, 3);
  EXPECT_EQ(*out[1].data, v);
  // A 2-D file's rows must have the model's width; a flat one is cut into rows of it.
  expectReason(rt::resolveEmbeddings({file(dir / "f32.npy", 0)}, -1, {0, 1, 2, 3, 4, 5}, 3, out),
               {"\"embeds[0].file\" '" + dir / "f32.npy" + "' has rows of 2 values; the model's embedding width is 3"});
  ASSERT_EQ(rt::resolveEmbeddings({file(dir / "flat.npy", 0)}, -1, {0, 1, 2, 3, 4, 5}, 3, out), "");
  EXPECT_EQ(out[0].rows, 2);

  writeBytes(dir / "big.npy", npy(">f4", "(3, 2)", bytesOf(v)));
  writeBytes(dir / "int.npy", npy("<i4", "(3, 2)", bytesOf(v)));
  writeBytes(dir / "fortran.npy", npy("<f4", "(3, 2)", bytesOf(v), true));
  writeBytes(dir / "short.npy", npy("<f4", "(4, 2)", bytesOf(v)));
  writeBytes(dir / "scalar.npy", npy("<f4", "()", bytesOf(v)));
  writeBytes(dir / "text.npy", "hello, world");
  auto reason = [&](const std::string &name) {
    std::vector<float> values;
    int64_t c = 0;
    return rt::readEmbeddingFile(dir / name, "", values, c);
  };
  expectReason(reason("big.npy"), {"dtype '>f4'", "little-endian float32"});
  expectReason(reason("int.npy"), {"dtype '<i4'"});
  expectReason(reason("fortran.npy"), {"Fortran order"});
  expectReason(reason("short.npy"), {"truncated", "[4, 2] needs 32 bytes", "it has 24"});
  expectReason(reason("scalar.npy"), {"scalar"});
  expectReason(reason("text.npy"), {"not a .npy file"});
  expectReason(reason("missing.npy"), {"cannot be read", "No such file"});
  expectReason(rt::resolveEmbeddings({file(dir / "missing.npy", 0)}, -1, {1}, 2, out),
               {"\"embeds[0].file\" '" + dir / "missing.npy" + "' cannot be read"});
}

TEST(EmbeddingSource, SafetensorsFiles) {
  TempDir dir;
  std::vector<float> v = iota(6);
  std::vector<uint16_t> bf = {0x3f80, 0xc000, 0x4040, 0x0000}; // 1, -2, 3, 0
  std::vector<uint16_t> h = {0x3c00, 0xc000};                  // 1, -2
  std::vector<int32_t> ints = {1, 2};
  writeBytes(dir / "one.safetensors", safetensors({{"image", "F32", {3, 2}, bytesOf(v)}}));
  writeBytes(dir / "many.safetensors", safetensors({{"a", "BF16", {2, 2}, bytesOf(bf)},
                                                    {"b", "F16", {1, 2}, bytesOf(h)},
                                                    {"c", "I32", {1, 2}, bytesOf(ints)}}));
  std::vector<float> got;
  int64_t columns = 0;
  ASSERT_EQ(rt::readEmbeddingFile(dir / "one.safetensors", "", got, columns), "");
  EXPECT_EQ(got, v);
  EXPECT_EQ(columns, 2);
  ASSERT_EQ(rt::readEmbeddingFile(dir / "many.safetensors", "a", got, columns), "");
  EXPECT_EQ(got, (std::vector<float>{1, -2, 3, 0}));
  ASSERT_EQ(rt::readEmbeddingFile(dir / "many.safetensors", "b", got, columns), "");
  EXPECT_EQ(got, (std::vector<float>{1, -2}));
  expectReason(rt::readEmbeddingFile(dir / "many.safetensors", "", got, columns),
               {"holds 3 tensors ('a', 'b', 'c'); name one with \"tensor\""});
  expectReason(rt::readEmbeddingFile(dir / "many.safetensors", "d", got, columns), {"has no tensor 'd'"});
  expectReason(rt::readEmbeddingFile(dir / "many.safetensors", "c", got, columns), {"tensor 'c' is I32", "F32, BF16 or F16"});
  writeBytes(dir / "bad.safetensors", "not safetensors at all");
  expectReason(rt::readEmbeddingFile(dir / "bad.safetensors", "", got, columns), {"cannot be read as safetensors"});

  std::vector<rt::EmbeddingSegment> out;
  ASSERT_EQ(rt::resolveEmbeddings({file(dir / "many.safetensors", -1, "a"), file(dir / "one.safetensors")}, 5,
                                  {5, 5, 0, 5, 5, 5}, 2, out),
            "");
  EXPECT_EQ(out[0].start, 0);
  EXPECT_EQ(out[0].rows, 2);
  EXPECT_EQ(out[1].start, 3);
  EXPECT_EQ(out[1].rows, 3);
}

} // namespace
} // namespace cbc::test
