// GPU suite: the CUDA TopK / RandK encoder is byte-identical to host::encode across dtypes,
// scopes (row; tensor on one block and on the whole grid), index layouts, k (ratio, count,
// all), raw and quantized values, and adversarial distributions; decoding (dense and
// accumulate) matches host::decode bit for bit; corrupt payloads get the host's status and
// leave the output untouched. Shared-mask mode is in test_topk_shared.cu. The CUDA calls go
// through gpu_backend (the only TU that instantiates the kernels).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../common/backend_checks.hpp"
#include "../common/print.hpp"
#include "gpu_backend.hpp"
#include "pipecodec/cuda/detail/topk_grid_select.cuh"
#include "topk_inputs.hpp"

using namespace pipecodec;

namespace {

const char* const encode_specs[] = {
    "topk:ratio=0.1,scope=row",
    "topk:ratio=0.01,scope=row,index=u32,values=fp16",
    "topk:k=7,scope=row,index=bitmap,values=bf16",
    "topk:ratio=1,scope=row,index=u16",
    "topk:ratio=0.3,scope=tensor",
    "topk:ratio=0.001,scope=tensor,index=u32",
    "topk:k=1,scope=tensor,values=bf16",
    "topk:ratio=0.05,scope=row,values=quant,bits=4",
    "topk:ratio=0.1,scope=row,values=quant,bits=2,group=64,round=stochastic",
    "topk:ratio=0.1,scope=tensor,values=quant,bits=3,group=tensor,round=stochastic,scale=absmax",
    "topk:ratio=0.02,scope=tensor,index=bitmap,values=quant,bits=8,group=row,scale_dtype=fp16",
    "randk:ratio=0.1,scope=row,seed=3",
    "randk:k=33,scope=tensor,unbiased=1,values=fp16",
    "randk:ratio=0.2,scope=tensor,values=quant,bits=5",
};

// Row scope: short and long rows, rows of length 1 and 0, an empty tensor; tensor scope: one
// block (n < 2^16) and the whole grid (n >= 2^16; a single row of that length takes the grid
// path too, and so do up to 16 rows of that length, one after the other).
const shape gpu_shapes[] = {shape(7, 3000),   shape(3, 70001),  shape(1, 5), shape(200000), shape(16, 16384),
                            shape(1, 131073), shape(17, 65536), shape(6, 1), shape(4, 0),   shape(0)};
const shape emulated_shapes[] = {shape(7, 3000),  shape(3, 9001),   shape(1, 5), shape(70001), shape(16, 1024),
                                 shape(1, 65537), shape(2, 65539),  shape(6, 1), shape(4, 0),  shape(0)};
const auto& encode_shapes = testg::emulated ? emulated_shapes : gpu_shapes;

// Device encode == host encode; then device decode (dense, accumulate) == host decode.
void check_case(testg::gpu_backend& b, const spec& s, shape shp, int kind, dtype t) {
  const auto in = testdata::as_bytes(testk_gpu::adversarial(kind, shp.size(), 17 + uint64_t(kind)), t);
  std::vector<uint8_t> want, got;
  REQUIRE(ok(testk_gpu::host_encode(s, in, t, shp, 5, want)));
  const status st = b.encode(s, in, t, shp, 5, got);
  REQUIRE_MESSAGE(ok(st), st);
  REQUIRE_MESSAGE(testb::first_difference(got, want) == -1, "first difference at byte " << testb::first_difference(got, want));
  // Decoded naming the codec (RandK: re-selection on the whole grid where the payload allows)
  // and, for RandK, also without (then on one block per unit).
  const bool randk = s.codec == codec_id::randk;
  for (int run = 0; run < (randk ? 3 : 2); ++run) {
    const bool acc = run == 1;
    b.decode_codec = run < 2 ? s.codec : codec_id{};
    CAPTURE(acc);
    CAPTURE(int(b.decode_codec));
    std::vector<uint8_t> hy = testb::accumulator(t, shp.size(), 9), dy = hy;
    REQUIRE(ok(testb::host_decode(want, want.size(), t, shp, hy, acc)));
    const status ds = b.decode_topk(got, nullptr, t, shp, dy, acc);
    REQUIRE_MESSAGE(ok(ds), ds);
    REQUIRE(testb::first_difference(dy, hy) == -1);
  }
  b.decode_codec = codec_id{};
}

}  // namespace

TEST_CASE("cuda topk/randk: payloads and decodes equal the host (specs x shapes x distributions x dtypes)") {
  testg::gpu_backend b;
  const bool quick = testg::quick();
  uint64_t pick = 0;
  for (const char* text : encode_specs)
    for (const shape& shp : encode_shapes)
      for (int kind = 0; kind < testk_gpu::kinds; ++kind, ++pick)
        for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
          // Emulated: one dtype per (spec, shape, distribution), in turn.
          if (testg::emulated && int(t) != 1 + int(pick % 3)) continue;
          if (quick && (kind != 5 || t != dtype::f32 || shp.size() > 70001)) continue;
          CAPTURE_TEXT(text);
          CAPTURE(shp.rows);
          CAPTURE(shp.cols);
          CAPTURE(kind);
          CAPTURE(int(t));
          spec s;
          REQUIRE(ok(parse_spec(text, s)));
          if (encoded_bytes(s, shp) == 0) continue;  // e.g. u16 indices for a long row
          check_case(b, s, shp, kind, t);
        }
}

TEST_CASE("cuda topk: large tensors on the whole grid (2^24 + 3 on a GPU, 2^18 + 3 emulated; many chunks, ties)") {
  if (testg::quick()) return;
  testg::gpu_backend b;
  const shape shp(testg::sized(uint64_t(1) << 24, uint64_t(1) << 18) + 3);
  for (const char* text : {"topk:ratio=0.01,scope=tensor", "topk:ratio=0.1,scope=tensor,values=bf16",
                           "topk:ratio=0.001,scope=tensor,values=quant,bits=4,group=128"})
    for (int kind : {0, 2, 5}) {
      CAPTURE_TEXT(text);
      CAPTURE(kind);
      spec s;
      REQUIRE(ok(parse_spec(text, s)));
      check_case(b, s, shp, kind, kind == 2 ? dtype::bf16 : dtype::f32);
    }
}

namespace {

namespace pcd = pipecodec::cuda::detail;  // not `cuda::`: CCCL has a ::cuda namespace too

// The whole-grid select's pass control as the last encode left it in the workspace.
pcd::topk_grid_state grid_state_after_encode(testg::gpu_backend& b, const spec& s, shape shp) {
  detail::topk_desc d;
  detail::topk_layout L;
  REQUIRE(ok(detail::resolve_topk(s, shp, 0, d)));
  REQUIRE(detail::make_topk_layout(d, shp, L));
  REQUIRE(pcd::grid_select_units(L));
  const uint64_t at = detail::make_topk_workspace(d, L).state_offset + detail::align16(16 * L.units);
  pcd::topk_grid_state g;
  testg::check_cuda(cudaMemcpy(&g, pcd::align_workspace(b.workspace.ptr) + at, sizeof g,
                               cudaMemcpyDeviceToHost),
                    "grid state");
  return g;
}

}  // namespace

// The read count of docs/TOPK.md: on ordinary inputs the pass that buffers the k-th key's
// bucket also counts the keys above it per chunk, so the count kernel reads only the buffer
// (3 reads of the input); a bucket kept whole after the first pass ends the select early
// (3 reads: pass 1, count, emit); inputs of few distinct values overflow the buffer and take
// the counting read (5). The payloads are byte-identical on every path (the cases above).
TEST_CASE("cuda topk: the grid select counts from its buffer unless it exits early or the buffer overflows") {
  testg::gpu_backend b;
  const shape shp(70001);
  const uint32_t first_digit = detail::topk_digit_mask(0) << detail::topk_digit_shift(0);
  const struct {
    const char* spec;
    int kind;
    bool buffered, first_pass_exit;
  } cases[] = {{"topk:ratio=0.01,scope=tensor", 0, true, false},
               {"randk:ratio=0.1,scope=tensor", 0, true, false},
               {"topk:ratio=0.3,scope=tensor", 5, false, true},  // 40 magnitudes: the k-th one's bucket is kept whole
               {"topk:ratio=0.01,scope=tensor", 1, false, false},
               {"topk:ratio=0.01,scope=tensor", 2, false, false}};
  for (const auto& c : cases) {
    CAPTURE_TEXT(c.spec);
    CAPTURE(c.kind);
    spec s;
    REQUIRE(ok(parse_spec(c.spec, s)));
    std::vector<uint8_t> got;
    REQUIRE(ok(b.encode(s, testdata::as_bytes(testk_gpu::adversarial(c.kind, shp.size(), 3), dtype::f32), dtype::f32,
                        shp, 5, got)));
    const auto g = grid_state_after_encode(b, s, shp);
    CHECK((g.buffered != 0) == c.buffered);
    CHECK((g.t.mask == first_digit) == c.first_pass_exit);
    CHECK(g.skip == 0);
  }
}

// The case a PTX simulator once failed (wrong ranks after block_compact_range): it ran
// shfl.sync lane by lane, so CUB's in-place 64-bit warp scan read neighbours' new values.
// The emulator reads every source lane before any lane writes, as the hardware does.
TEST_CASE("cuda topk: bitmap positions of 9 rows of 5000 (ranks from the block scan)") {
  testg::gpu_backend b;
  spec s;
  REQUIRE(ok(parse_spec("topk:ratio=0.1,scope=row,index=bitmap", s)));
  for (int kind : {0, 5}) {
    CAPTURE(kind);
    check_case(b, s, shape(9, 5000), kind, dtype::f32);
  }
}

// A payload may sit anywhere (e.g. packed after another in one send buffer), as on the host:
// misaligned index and value sections are stored bytewise, a misaligned bitmap is built in
// the workspace and copied in.
TEST_CASE("cuda topk: payloads at any address") {
  for (size_t off : {size_t(1), size_t(2), size_t(3), size_t(8)}) {
    if (testg::quick() && off != 3) continue;
    testg::gpu_backend b;
    b.payload_offset = off;
    for (const char* text : {"topk:ratio=0.01,scope=row,index=u32", "topk:ratio=0.02,scope=row,index=u16,values=fp16",
                             "topk:ratio=0.1,scope=row,index=bitmap,values=bf16",
                             "topk:ratio=0.3,scope=tensor,index=bitmap,values=quant,bits=4",
                             "randk:k=40,scope=row,unbiased=1,values=fp16"})
      for (const shape& shp : {shape(7, 3000), shape(70001)}) {
        CAPTURE(off);
        CAPTURE_TEXT(text);
        CAPTURE(shp.rows);
        if (testg::quick() && std::string(text).find("bitmap") == std::string::npos) continue;
        spec s;
        REQUIRE(ok(parse_spec(text, s)));
        if (encoded_bytes(s, shp) == 0) continue;
        check_case(b, s, shp, 5, dtype::f32);
      }
  }
}

TEST_CASE("cuda topk: workspace_bytes() is required at every payload address, as on the host") {
  spec s;
  REQUIRE(ok(parse_spec("topk:ratio=0.1,scope=row,index=bitmap", s)));
  const shape shp(7, 3000);
  const size_t cap = encoded_bytes(s, shp), ws = workspace_bytes(s, shp);
  const auto x = testdata::activations(shp.size(), 3);
  for (size_t off : {size_t(0), size_t(1)}) {  // aligned: no staging needed, still required
    CAPTURE(off);
    testg::gpu_backend b;
    b.in.reserve(x.size() * 4);
    b.payload.reserve(cap + 8);
    b.workspace.reserve(ws);
    // On the codec's stream: a cudaMemcpy from pageable memory may return before its copy is
    // done, unordered with the non-blocking stream (the TSan build caught exactly that here).
    testg::check_cuda(cudaMemcpyAsync(b.in.ptr, x.data(), x.size() * 4, cudaMemcpyHostToDevice, b.stream), "input");
    const const_tensor_view in{b.in.ptr, dtype::f32, shp};
    uint8_t* payload = static_cast<uint8_t*>(b.payload.ptr) + off;
    CHECK(b.encode_raw(s, in, payload, cap, b.workspace.ptr, ws - 1) == status::workspace_too_small);
    CHECK(b.encode_raw(s, in, payload, cap, b.workspace.ptr, ws) == status::success);
    std::vector<uint8_t> ws_host(ws);
    CHECK(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, std::vector<uint8_t>(cap).data(), cap,
                       ws_host.data(), ws - 1) == status::workspace_too_small);
  }
}

TEST_CASE("cuda topk: default stream, graph capture, unaligned workspace") {
  for (testg::launch_mode mode : {testg::launch_mode::default_stream, testg::launch_mode::graph})
    for (size_t ws_off : {size_t(0), size_t(3)}) {
      if (testg::quick() && (ws_off != 0 || mode != testg::launch_mode::graph)) continue;
      testg::gpu_backend b;
      b.mode = mode;
      b.workspace_offset = ws_off;
      for (const char* text : {"topk:ratio=0.05,scope=tensor", "topk:ratio=0.1,scope=row,values=quant,bits=4",
                               "randk:ratio=0.1,scope=tensor,seed=11"}) {
        CAPTURE_TEXT(text);
        CAPTURE(ws_off);
        spec s;
        REQUIRE(ok(parse_spec(text, s)));
        check_case(b, s, shape(40, 5000), 5, dtype::f32);
      }
    }
}

namespace {

// A payload of `spec` for an input of shape shp, corrupted as named (testk_gpu::corrupt),
// decodes on the device to the host's status and output; a rejected one leaves it untouched.
struct corruption {
  const char* spec;
  const char* what;
};

void check_corruption(testg::gpu_backend& b, const corruption& c, shape shp, bool acc) {
  CAPTURE_TEXT(c.spec);
  CAPTURE_TEXT(c.what);
  CAPTURE(acc);
  CAPTURE(shp.size());
  spec s;
  REQUIRE(ok(parse_spec(c.spec, s)));
  const auto in = testdata::as_bytes(testdata::activations(shp.size(), 3), dtype::f32);
  std::vector<uint8_t> pl;
  if (s.topk.shared_mask) {  // a values-only payload, made by the host with its mask
    spec ms = s;
    ms.topk.shared_mask = false;
    std::vector<uint8_t> mask;
    REQUIRE(ok(testk_gpu::host_encode(ms, in, dtype::f32, shp, 0, mask)));
    REQUIRE(ok(testk_gpu::host_encode(s, in, dtype::f32, shp, 0, pl, &mask)));
  } else {
    REQUIRE(ok(testk_gpu::host_encode(s, in, dtype::f32, shp, 0, pl)));
  }
  testk_gpu::corrupt(pl, c.what);
  std::vector<uint8_t> hy = testb::accumulator(dtype::f32, shp.size(), 4), dy = hy;
  const status hs = testb::host_decode(pl, pl.size(), dtype::f32, shp, hy, acc);
  b.decode_codec = s.codec;
  CHECK(b.decode_topk(pl, nullptr, dtype::f32, shp, dy, acc) == hs);
  b.decode_codec = codec_id{};
  CHECK(ok(hs) == (std::string(c.what) == "none"));
  CHECK(testb::first_difference(dy, hy) == -1);
}

}  // namespace

TEST_CASE("cuda topk: corrupt payloads get the host's status and leave the output untouched") {
  testg::gpu_backend b;
  const corruption cases[] = {
      {"topk:ratio=0.1,scope=row,index=u32", "scope byte"},
      {"topk:ratio=0.1,scope=row,index=u32", "index out of range"},
      {"topk:ratio=0.1,scope=row,index=u16", "duplicate index"},
      {"topk:ratio=0.5,scope=row,index=bitmap", "extra bitmap bit"},
      {"topk:ratio=0.1,scope=row,values=quant,bits=4", "NaN scale"},
      {"topk:ratio=0.1,scope=row,values=fp16", "padding byte"},
      {"randk:ratio=0.1,scope=row,seed=3", "scope byte"},
      {"topk:ratio=0.1,scope=row,mask=shared", "shared payload alone"},
      {"topk:ratio=0.1,scope=row", "none"},
  };
  for (const corruption& c : cases)
    for (bool acc : {false, true}) check_corruption(b, c, shape(9, 5000), acc);
}

// One large unit (scope=tensor, n >= 2^16) is validated by the whole grid: every block
// checks its share of the positions and a bitmap's bit count is summed over chunks, so a
// fault in the last chunk must be found as surely as one in the first.
TEST_CASE("cuda topk: a large tensor's payload is validated by the whole grid, faults in any chunk") {
  testg::gpu_backend b;
  const corruption cases[] = {
      {"topk:ratio=0.01,scope=tensor,index=u32", "index out of range"},
      {"topk:ratio=0.01,scope=tensor,index=u32", "last index out of range"},
      {"topk:ratio=0.01,scope=tensor,index=u32", "last index repeated"},
      {"topk:ratio=0.3,scope=tensor,index=bitmap", "extra bitmap bit"},
      {"topk:ratio=0.3,scope=tensor,index=bitmap", "last bitmap bit cleared"},
      {"topk:ratio=0.3,scope=tensor,index=bitmap", "last bitmap bit added"},
      {"topk:ratio=0.3,scope=tensor,index=bitmap,values=fp16", "bitmap bit past n"},
      {"topk:ratio=0.2,scope=tensor,index=bitmap,values=quant,bits=4", "NaN scale"},
      {"topk:ratio=0.2,scope=tensor,index=bitmap,values=quant,bits=4", "none"},
      {"topk:ratio=0.01,scope=tensor,index=u32", "none"},
      {"randk:ratio=0.05,scope=tensor,values=quant,bits=4", "NaN scale"},
      {"randk:ratio=0.05,scope=tensor,seed=9", "scope byte"},
      {"randk:ratio=0.05,scope=tensor,seed=9", "none"},
  };
  // Neither size is a multiple of 8: the bitmap has room for a bit past n.
  for (const shape shp : {shape(testg::sized(uint64_t(1) << 22, 70001) + 2), shape(1, 65537)})
    for (const corruption& c : cases)
      for (bool acc : {false, true})
        if (!testg::quick() || (!acc && shp.rows != 1)) check_corruption(b, c, shp, acc);
}

// A few long rows (at most 16, each >= 2^16) are validated, and RandK rows re-selected, by
// the whole grid, one share of the chunks per row: a bitmap bit moved from one row to the
// next keeps the total and must still be found.
TEST_CASE("cuda topk: a few long rows are validated and decoded by the whole grid") {
  testg::gpu_backend b;
  const corruption cases[] = {
      {"topk:ratio=0.01,scope=row,index=u32", "index out of range"},
      {"topk:ratio=0.01,scope=row,index=u32", "last index out of range"},
      {"topk:ratio=0.01,scope=row,index=u32", "last index repeated"},
      {"topk:ratio=0.3,scope=row,index=bitmap", "extra bitmap bit"},
      {"topk:ratio=0.3,scope=row,index=bitmap", "last bitmap bit cleared"},
      {"topk:ratio=0.3,scope=row,index=bitmap", "bitmap bit moved to the next unit"},
      {"topk:ratio=0.3,scope=row,index=bitmap,values=fp16", "bitmap bit past n"},
      {"topk:ratio=0.2,scope=row,index=bitmap,values=quant,bits=4", "NaN scale"},
      {"topk:ratio=0.2,scope=row,index=bitmap,values=quant,bits=4", "none"},
      {"topk:ratio=0.01,scope=row,index=u32", "none"},
      {"randk:ratio=0.05,scope=row,values=quant,bits=4", "NaN scale"},
      {"randk:ratio=0.05,scope=row,seed=9", "none"},
  };
  // Rows that are not a multiple of 8 long: row 1's bits start inside a byte.
  const shape shp(testg::emulated ? 3 : 5, testg::sized((uint64_t(1) << 21) + 3, 65539));
  for (const corruption& c : cases)
    for (bool acc : {false, true})
      if (!testg::quick() || !acc) check_corruption(b, c, shp, acc);
}
