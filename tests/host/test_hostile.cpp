// Hostile input: truncated, corrupted and malicious payloads and bad arguments (sizes and
// extreme values: test_limits.cpp). Every case must give its specific documented status (docs/ERRORS.md), never a
// crash or over-read (payloads live in exact-size heap buffers, so ASan sees any over-read),
// and a rejected decode must leave its output untouched, accumulating or not.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "../common/hostile.hpp"
#include "../common/print.hpp"

using namespace pipecodec;
using hostile::case_of;
using hostile::payload_of;
using hostile::plain_2d;
using hostile::quant_f16;
using hostile::quant_f32;

namespace {

struct decode_result {
  status st;
  bool untouched;  // output bytes unchanged
};

decode_result decode_sentinel(const uint8_t* p, size_t len, shape shp, dtype t, bool accumulate) {
  std::vector<uint8_t> out(shp.size() * dtype_bytes(t));
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(i * 31 + 7);
  const std::vector<uint8_t> before = out;
  const tensor_view v{out.data(), t, shp};
  const status st = accumulate ? host::decode_accumulate(p, len, v) : host::decode(p, len, v);
  return {st, out == before};
}

// Decodes (plain and accumulating, into every dtype) and expects `want` with the output untouched.
void expect_rejected(const std::vector<uint8_t>& p, shape shp, status want) {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    for (bool acc : {false, true}) {
      const decode_result r = decode_sentinel(p.data(), p.size(), shp, t, acc);
      CHECK_MESSAGE(r.st == want, "got " << r.st << ", want " << want);
      CHECK(r.untouched);
    }
  }
}

std::vector<uint8_t> with(std::vector<uint8_t> p, const std::function<void(uint8_t*)>& f) {
  f(p.data());
  return p;
}

}  // namespace

TEST_CASE("every truncation of every golden payload is 'truncated' and leaves the output untouched") {
  for (const auto& c : golden::cases()) {
    CAPTURE_TEXT(c.name);
    const auto full = golden::encode(c);
    REQUIRE(!full.empty());
    for (size_t len = 0; len < full.size(); ++len) {
      // An exact-size heap copy of the prefix (never a null pointer, even for len 0).
      std::unique_ptr<uint8_t[]> prefix(new uint8_t[len ? len : 1]);
      std::memcpy(prefix.get(), full.data(), len);
      for (bool acc : {false, true}) {
        const decode_result r = decode_sentinel(prefix.get(), len, c.shp, c.in, acc);
        if (r.st != status::truncated || !r.untouched) {
          FAIL_CHECK("length " << len << ": " << r.st << std::string(r.untouched ? "" : ", output written"));
          break;
        }
      }
    }
  }
}

namespace {

// The single-byte changes of every golden payload at its byte offsets i with i % 2 == parity:
// two test cases, so the suite's slowest test runs as two processes of about equal length
// (tests/meson.build; split by case instead, the larger payloads made one over three times
// the other under ASan).
void single_byte_changes(size_t parity) {
  size_t rejected = 0, accepted = 0;
  for (const auto& c : golden::cases()) {
    CAPTURE_TEXT(c.name);
    const auto good = golden::encode(c);
    REQUIRE(!good.empty());
    const bool is_quant = golden::spec_of(c).codec == codec_id::quant;
    for (size_t i = parity; i < good.size(); i += 2) {
      // Header bytes get every value; section bytes the ones that flip signs, exponents, NaNs.
      std::vector<uint8_t> values;
      if (i < header_bytes) {
        for (int v = 0; v < 256; ++v) values.push_back(uint8_t(v));
      } else {
        values = {uint8_t(good[i] ^ 0x01), uint8_t(good[i] ^ 0x80), uint8_t(good[i] ^ 0xFF), 0x00, 0xFF, 0x7F, 0x7C};
      }
      for (uint8_t v : values) {
        if (v == good[i]) continue;
        std::vector<uint8_t> bad = good;
        bad[i] = v;
        for (bool acc : {false, true}) {
          const decode_result r = decode_sentinel(bad.data(), bad.size(), c.shp, dtype::f32, acc);
          if (ok(r.st)) {
            ++accepted;
          } else {
            ++rejected;
            if (!r.untouched) FAIL_CHECK("byte " << i << " = " << int(v) << ": rejected (" << r.st << ") but wrote output");
          }
        }
        if (is_quant) {  // an accepted quant payload never decodes to a non-finite value
          std::vector<float> out(c.shp.size());
          // One check per payload, not per element: 30 million doctest assertions cost most
          // of this test's time, under the sanitizers too.
          if (ok(host::decode(bad.data(), bad.size(), tensor_view{out.data(), dtype::f32, c.shp})) &&
              !std::all_of(out.begin(), out.end(), [](float x) { return std::isfinite(x); }))
            FAIL_CHECK("byte " << i << " = " << int(v) << ": accepted quant decode has a non-finite value");
        }
      }
    }
  }
  MESSAGE("single-byte changes: " << rejected << " rejected, " << accepted << " accepted decodes");
  CHECK(rejected > 0);
  CHECK(accepted > 0);
}

}  // namespace

TEST_CASE("every single-byte change of every golden payload decodes or is rejected cleanly (even bytes)") {
  single_byte_changes(0);
}

TEST_CASE("every single-byte change of every golden payload decodes or is rejected cleanly (odd bytes)") {
  single_byte_changes(1);
}

TEST_CASE("header fields: each bad value gives its specific status") {
  for (const char* name : {quant_f32, quant_f16, plain_2d}) {
    CAPTURE_TEXT(name);
    const auto p = payload_of(name);
    const shape shp = case_of(name).shp;
    using namespace detail;
    for (int k = 0; k < 4; ++k)
      expect_rejected(with(p, [&](uint8_t* b) { b[off_magic + k] ^= 0x20; }), shp, status::bad_magic);
    for (uint16_t v : {0, 2, 0x100, 0xFFFF})
      expect_rejected(with(p, [&](uint8_t* b) { put_u16(b + off_version, v); }), shp, status::unsupported_version);
    for (uint8_t v : {0, 8, 0x80, 0xFF})
      expect_rejected(with(p, [&](uint8_t* b) { b[off_codec] = v; }), shp, status::unknown_codec);
    for (uint8_t v : {0, 4, 0xFF})
      expect_rejected(with(p, [&](uint8_t* b) { b[off_dtype] = v; }), shp, status::invalid_header);
    for (uint8_t v : {0, 3, 0xFF})
      expect_rejected(with(p, [&](uint8_t* b) { b[off_ndim] = v; }), shp, status::invalid_header);
    for (uint16_t v : {0, 63, 65, 128})
      expect_rejected(with(p, [&](uint8_t* b) { put_u16(b + off_header_size, v); }), shp, status::invalid_header);
    for (int k = 0; k < 4; ++k)
      expect_rejected(with(p, [&](uint8_t* b) { b[off_reserved + k] = 1; }), shp, status::invalid_header);
    for (uint8_t v : {2, 4, 0x80, 0xFE})
      expect_rejected(with(p, [&](uint8_t* b) { b[off_flags] = v; }), shp, status::invalid_header);
    // A flag that announces a sample-id section the payload does not have.
    expect_rejected(with(p, [&](uint8_t* b) { b[off_flags] = flag_sample_ids; }), shp, status::size_mismatch);
    // Shapes: rows * cols overflowing 64 bits, above max_elements, 1-D with rows != 1.
    expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + off_rows, uint64_t(1) << 33); put_u64(b + off_cols, uint64_t(1) << 33); b[off_ndim] = 2; }),
                    shp, status::invalid_header);
    expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + off_rows, 1); put_u64(b + off_cols, max_elements + 1); b[off_ndim] = 1; }),
                    shp, status::invalid_header);
    expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + off_rows, 2); b[off_ndim] = 1; }), shp, status::invalid_header);
    // A shape that implies a different size.
    const uint32_t grow = shp.ndim == 2 ? off_rows : off_cols;  // keeps row groups one row long
    expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + grow, get_u64(b + grow) * 2); }), shp, status::size_mismatch);
    // total_bytes: below the header, beyond the buffer, inconsistent with the layout.
    for (uint64_t v : {uint64_t(0), uint64_t(63)})
      expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + off_total, v); }), shp, status::invalid_header);
    for (uint64_t v : {uint64_t(p.size() + 1), uint64_t(p.size() + 16), ~uint64_t(0)})
      expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + off_total, v); }), shp, status::truncated);
    expect_rejected(with(p, [&](uint8_t* b) { put_u64(b + off_total, p.size() - 16); }), shp, status::size_mismatch);
    std::vector<uint8_t> longer = p;
    longer.resize(p.size() + 16, 0);
    expect_rejected(with(longer, [&](uint8_t* b) { put_u64(b + off_total, longer.size()); }), shp, status::size_mismatch);
    // Bytes after the declared payload are not part of it: the decode is unchanged.
    std::vector<float> a(shp.size()), b2(shp.size());
    REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{a.data(), dtype::f32, shp})));
    REQUIRE(ok(host::decode(longer.data(), longer.size(), tensor_view{b2.data(), dtype::f32, shp})));
    CHECK(std::memcmp(a.data(), b2.data(), 4 * a.size()) == 0);
  }
}

TEST_CASE("quant parameter bytes: each bad value gives its specific status") {
  const auto p = payload_of(quant_f32);
  const shape shp = case_of(quant_f32).shp;
  constexpr uint32_t P = detail::off_params;
  auto param = [&](uint32_t i, uint8_t v) { return with(p, [&](uint8_t* b) { b[P + i] = v; }); };
  for (uint8_t v : {0, 9, 0xFF}) expect_rejected(param(0, v), shp, status::invalid_header);   // bits
  for (uint8_t v : {0, 3}) expect_rejected(param(1, v), shp, status::invalid_header);          // scale mode
  for (uint8_t v : {0, 4}) expect_rejected(param(2, v), shp, status::invalid_header);          // rounding (3: rng=sample)
  for (uint8_t v : {0, 3, 4}) expect_rejected(param(3, v), shp, status::invalid_header);       // scale dtype (bf16 too)
  for (uint8_t v : {0, 4}) expect_rejected(param(4, v), shp, status::invalid_header);          // group kind
  for (uint32_t i : {5u, 6u}) expect_rejected(param(i, 1), shp, status::invalid_header);       // rotation alone
  expect_rejected(param(7, 17), shp, status::invalid_header);                                  // outliers > 16
  expect_rejected(param(7, 1), shp, status::size_mismatch);  // outliers: valid, a longer layout
  auto group_len = [&](uint64_t v) { return with(p, [&](uint8_t* b) { detail::put_u64(b + P + 8, v); }); };
  for (uint64_t v : {uint64_t(0), uint64_t(129), uint64_t(16), (uint64_t(1) << 32) + 128})
    expect_rejected(group_len(v), shp, status::invalid_header);
  expect_rejected(group_len(64), shp, status::size_mismatch);   // valid, but a different layout
  // Changing bits or the scale mode changes the layout size.
  expect_rejected(param(0, 5), shp, status::size_mismatch);
  expect_rejected(param(1, 2), shp, status::size_mismatch);
  // Row groups must span exactly one row.
  const auto q2 = payload_of(quant_f16);
  expect_rejected(with(q2, [&](uint8_t* b) { detail::put_u64(b + P + 8, 78); }), case_of(quant_f16).shp, status::invalid_header);
  // The rounding mode and seed only describe how the payload was made: decoding ignores them.
  std::vector<float> a(shp.size()), b(shp.size());
  REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{a.data(), dtype::f32, shp})));
  const auto seeded = with(p, [&](uint8_t* q) { q[P + 2] = 2; detail::put_u64(q + P + 16, 12345); });
  REQUIRE(ok(host::decode(seeded.data(), seeded.size(), tensor_view{b.data(), dtype::f32, shp})));
  CHECK(a == b);
}

TEST_CASE("plain parameter bytes: each bad value gives its specific status") {
  const auto p = payload_of(plain_2d);
  const shape shp = case_of(plain_2d).shp;
  constexpr uint32_t P = detail::off_params;
  for (uint8_t v : {0, 4, 0xFF}) expect_rejected(with(p, [&](uint8_t* b) { b[P] = v; }), shp, status::invalid_header);
  for (uint32_t i = 1; i < header_param_bytes; ++i)
    expect_rejected(with(p, [&](uint8_t* b) { b[P + i] = 1; }), shp, status::invalid_header);
  expect_rejected(with(p, [&](uint8_t* b) { b[P] = uint8_t(dtype::f16); }), shp, status::size_mismatch);
}

TEST_CASE("stored scales and offsets: non-finite, negative, unstorable or overflowing are corrupt_payload") {
  using detail::put_u16;
  using detail::put_u32;
  const uint32_t S = header_bytes;  // scales section; offsets follow after `groups` entries
  {  // fp32 scales, minmax, 8 groups
    const auto p = payload_of(quant_f32);
    const shape shp = case_of(quant_f32).shp;
    const uint32_t groups = 8, last = groups - 1;
    for (uint32_t g : {0u, last}) {  // the last group too: validation precedes any write
      CAPTURE(g);
      for (uint32_t bits : {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0xBF800000u, 0x80000000u, 0x3F800001u, 0x3F800080u, 0x7F7FFF00u})
        expect_rejected(with(p, [&](uint8_t* b) { put_u32(b + S + 4 * g, bits); }), shp, status::corrupt_payload);
      for (uint32_t bits : {0x7FC00000u, 0x7F800000u, 0xFF800000u})
        expect_rejected(with(p, [&](uint8_t* b) { put_u32(b + S + 4 * (groups + g), bits); }), shp, status::corrupt_payload);
      // Finite scale and offset whose top code overflows: offset near FLT_MAX.
      expect_rejected(with(p, [&](uint8_t* b) { put_u32(b + S + 4 * (groups + g), 0x7F7FFFFFu); put_u32(b + S + 4 * g, 0x7E000000u); }),
                      shp, status::corrupt_payload);
    }
    // Scale 0 is valid (a constant group) and any finite offset with it.
    const auto zero = with(p, [&](uint8_t* b) { put_u32(b + S, 0); put_u32(b + S + 4 * groups, 0xFF7FFFFFu); });
    std::vector<float> out(shp.size());
    REQUIRE(ok(host::decode(zero.data(), zero.size(), tensor_view{out.data(), dtype::f32, shp})));
    for (int i = 0; i < 128; ++i) REQUIRE(out[i] == -detail::flt_max);
  }
  {  // fp16 scales, absmax, one group per row
    const auto p = payload_of(quant_f16);
    const shape shp = case_of(quant_f16).shp;
    for (uint16_t h : {0x7C00, 0x7E00, 0x7C01, 0xFC00, 0x8000, 0x8001, 0xBC00})
      expect_rejected(with(p, [&](uint8_t* b) { put_u16(b + S + 2 * 4, h); }), shp, status::corrupt_payload);
  }
  {  // fp16 scales and offsets, minmax
    const char* name = "q2_g64_minmax_near_s16_f16_4x50";
    const auto p = payload_of(name);
    const shape shp = case_of(name).shp;
    const uint32_t groups = 4;
    for (uint16_t h : {0x7C00, 0xFC00, 0x7E00, 0xFE01})
      expect_rejected(with(p, [&](uint8_t* b) { put_u16(b + S + 2 * (groups + 3), h); }), shp, status::corrupt_payload);
    // The largest fp16 scale and offset still decode to finite values: accepted.
    const auto big = with(p, [&](uint8_t* b) { put_u16(b + S, 0x7BFF); put_u16(b + S + 2 * groups, 0x7BFF); });
    std::vector<float> out(shp.size());
    REQUIRE(ok(host::decode(big.data(), big.size(), tensor_view{out.data(), dtype::f32, shp})));
    for (float x : out) REQUIRE(std::isfinite(x));
  }
}

TEST_CASE("output shape must match the payload; the output dtype is free") {
  const auto p = payload_of(quant_f16);  // 5 x 77
  expect_rejected(p, shape(77, 5), status::shape_mismatch);
  expect_rejected(p, shape(385), status::shape_mismatch);
  expect_rejected(p, shape(1, 385), status::shape_mismatch);
  expect_rejected(p, shape(5, 78), status::shape_mismatch);
  const auto q = payload_of(quant_f32);  // 1-D 1000
  expect_rejected(q, shape(1, 1000), status::shape_mismatch);
  expect_rejected(q, shape(999), status::shape_mismatch);
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
    CHECK(ok(decode_sentinel(q.data(), q.size(), shape(1000), t, false).st));
}

TEST_CASE("bad arguments: specs, dtypes, null pointers, small buffers, aliasing") {
  const auto& c = case_of(quant_f32);
  const spec good = golden::spec_of(c);
  const auto in = golden::input_bytes(c);
  const const_tensor_view view{in.data(), c.in, c.shp};
  const size_t cap = encoded_bytes(good, c.shp);
  std::vector<uint8_t> buf(cap + 32, 0x5A);
  const std::vector<uint8_t> untouched = buf;
  auto enc = [&](const spec& s, const_tensor_view v, void* out, size_t capacity) {
    return host::encode(s, v, out, capacity, nullptr, 0, 1, nullptr);
  };

  SUBCASE("invalid specs are invalid_spec, unknown codecs not_supported, before anything is written") {
    std::vector<std::function<void(spec&)>> breakers = {
        [](spec& s) { s.quant.bits = 0; }, [](spec& s) { s.quant.bits = 9; },
        [](spec& s) { s.quant.group_size = 0; }, [](spec& s) { s.quant.group_size = 48; },
        [](spec& s) { s.quant.group_size = 16; }, [](spec& s) { s.quant.group = group_kind(4); },
        [](spec& s) { s.quant.scale = scale_mode(0); }, [](spec& s) { s.quant.round = rounding(3); },
        [](spec& s) { s.quant.scale_dtype = dtype::bf16; }, [](spec& s) { s.quant.scale_dtype = dtype(0); }};
    for (auto& f : breakers) {
      spec s = good;
      f(s);
      CHECK(encoded_bytes(s, c.shp) == 0);
      CHECK(enc(s, view, buf.data(), buf.size()) == status::invalid_spec);
    }
    spec pl;
    pl.codec = codec_id::plain;
    pl.plain.wire = dtype(0);
    CHECK(encoded_bytes(pl, c.shp) == 0);
    CHECK(enc(pl, view, buf.data(), buf.size()) == status::invalid_spec);
    for (uint8_t id : {0, 9, 0xFF}) {
      spec s = good;
      s.codec = codec_id(id);
      CHECK(encoded_bytes(s, c.shp) == 0);
      CHECK(enc(s, view, buf.data(), buf.size()) == status::not_supported);
    }
    CHECK(buf == untouched);
  }
  SUBCASE("unknown tensor dtypes are invalid_argument, before anything is written") {
    for (const spec& s : {good, golden::spec_of(case_of(plain_2d))}) {
      for (uint8_t t : {0, 4, 0xFF}) {
        CHECK(enc(s, const_tensor_view{in.data(), dtype(t), c.shp}, buf.data(), buf.size()) == status::invalid_argument);
        CHECK(buf == untouched);
      }
    }
    const auto p = payload_of(quant_f32);
    std::vector<float> out(c.shp.size(), 2.0F);
    for (uint8_t t : {0, 4, 0xFF}) {
      CHECK(host::decode(p.data(), p.size(), tensor_view{out.data(), dtype(t), c.shp}) == status::invalid_argument);
      CHECK(host::decode_accumulate(p.data(), p.size(), tensor_view{out.data(), dtype(t), c.shp}) == status::invalid_argument);
    }
    for (float x : out) REQUIRE(x == 2.0F);
  }
  SUBCASE("payload buffer too small: buffer_too_small, nothing written") {
    for (size_t capacity : {size_t(0), size_t(1), size_t(63), cap - 1}) {
      CHECK(enc(good, view, buf.data(), capacity) == status::buffer_too_small);
      CHECK(buf == untouched);
    }
    CHECK(ok(enc(good, view, buf.data(), cap)));
    CHECK(std::equal(buf.begin() + long(cap), buf.end(), untouched.begin() + long(cap)));  // nothing past cap
  }
  SUBCASE("null pointers: invalid_argument unless there is nothing to read or write") {
    CHECK(enc(good, view, nullptr, cap) == status::invalid_argument);
    CHECK(enc(good, const_tensor_view{nullptr, c.in, c.shp}, buf.data(), buf.size()) == status::invalid_argument);
    CHECK(ok(enc(good, const_tensor_view{nullptr, c.in, shape(0)}, buf.data(), buf.size())));
    CHECK(ok(enc(good, const_tensor_view{nullptr, c.in, shape(4, 0)}, buf.data(), buf.size())));
    const auto p = payload_of(quant_f32);
    CHECK(host::decode(nullptr, p.size(), tensor_view{nullptr, dtype::f32, c.shp}) == status::invalid_argument);
    CHECK(host::decode(nullptr, 0, tensor_view{nullptr, dtype::f32, shape(0)}) == status::invalid_argument);
    CHECK(host::decode(p.data(), p.size(), tensor_view{nullptr, dtype::f32, c.shp}) == status::invalid_argument);
    CHECK(host::decode_accumulate(p.data(), p.size(), tensor_view{nullptr, dtype::f32, c.shp}) == status::invalid_argument);
    const auto empty = payload_of("q4_g128_minmax_near_s32_f32_0");
    CHECK(ok(host::decode(empty.data(), empty.size(), tensor_view{nullptr, dtype::f32, shape(0)})));
    // Plain copies with memcpy when the dtypes agree: a null pointer with 0 elements is fine
    // (found by the round-trip fuzzer; memcpy(nullptr, p, 0) is undefined behaviour).
    spec pl;
    pl.codec = codec_id::plain;
    std::vector<uint8_t> pp(encoded_bytes(pl, shape(0)));
    REQUIRE(ok(host::encode(pl, const_tensor_view{nullptr, dtype::f32, shape(0)}, pp.data(), pp.size())));
    CHECK(ok(host::decode(pp.data(), pp.size(), tensor_view{nullptr, dtype::f32, shape(0)})));
  }
  SUBCASE("overlapping input and payload, or payload and output: aliasing, nothing written") {
    for (const spec& s : {good, golden::spec_of(case_of(plain_2d))}) {
      const shape shp = c.shp;
      const size_t in_bytes = in.size(), need = encoded_bytes(s, shp);
      // Input at [need, need + in_bytes); payloads at [k, k + need) overlap it by >= 1 byte.
      for (size_t k : {size_t(1), size_t(8), need, need + in_bytes - 1}) {
        std::vector<uint8_t> arena(2 * need + in_bytes, 0);
        std::memcpy(arena.data() + need, in.data(), in_bytes);
        const std::vector<uint8_t> before = arena;
        CHECK(host::encode(s, const_tensor_view{arena.data() + need, c.in, shp}, arena.data() + k, need, nullptr, 0,
                           0, nullptr) == status::aliasing);
        CHECK(arena == before);
      }
      // Adjacent but disjoint is fine.
      std::vector<uint8_t> arena(in_bytes + need);
      std::memcpy(arena.data(), in.data(), in_bytes);
      CHECK(ok(host::encode(s, const_tensor_view{arena.data(), c.in, shp}, arena.data() + in_bytes, need, nullptr, 0, 0, nullptr)));
      // Decode into memory overlapping the payload.
      std::vector<uint8_t> p(arena.begin() + long(in_bytes), arena.end());
      std::vector<uint8_t> big(p.size() + shp.size() * 4 + 8);
      std::memcpy(big.data(), p.data(), p.size());
      for (size_t at : {size_t(0), size_t(8), p.size() - 4}) {
        const auto before = big;
        CHECK(host::decode(big.data(), p.size(), tensor_view{big.data() + at, dtype::f32, shp}) == status::aliasing);
        CHECK(host::decode_accumulate(big.data(), p.size(), tensor_view{big.data() + at, dtype::f32, shp}) == status::aliasing);
        CHECK(big == before);
      }
      CHECK(ok(host::decode(big.data(), p.size(), tensor_view{big.data() + p.size(), dtype::f32, shp})));
    }
  }
}

