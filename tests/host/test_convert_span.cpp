// The span conversions of the host state loops (host/convert_span.hpp) against core's
// element-wise load<T> / store<T>, bit for bit: every fp16 and bf16 pattern widened, a stride
// through every fp32 pattern narrowed, NaN and Inf in every lane of a vector block, lengths
// and offsets that are not multiples of a block or a chunk. Built twice (tests/meson.build):
// at default flags and with -march=native, where fp16 takes the F16C path.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "../common/print.hpp"
#include "pipecodec/core/dispatch.hpp"
#include "pipecodec/host/convert_span.hpp"

using namespace pipecodec;
using pipecodec::detail::bit_cast;

namespace {

uint32_t f32_bits(float f) { return bit_cast<uint32_t>(f); }

// fp32 patterns: specials, fp16 rounding boundaries and ties, and a stride through all 2^32.
std::vector<float> f32_patterns() {
  std::vector<uint32_t> u = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                             0x7F800001u, 0x7FBFFFFFu, 0x00000001u, 0x807FFFFFu, 0x33000000u, 0x33000001u,
                             0x337FFFFFu, 0x38800000u, 0x387FE000u, 0x387FF000u, 0x477FE000u, 0x477FEFFFu,
                             0x477FF000u, 0x477FF001u, 0xC77FF000u, 0x3F801000u, 0x3F803000u, 0x3F800FFFu};
  for (uint64_t x = 0; x < (uint64_t(1) << 32); x += 4093) u.push_back(uint32_t(x));
  std::vector<float> f(u.size());
  for (size_t i = 0; i < u.size(); ++i) f[i] = bit_cast<float>(u[i]);
  return f;
}

template <dtype T>
void check_narrowing(const std::vector<float>& src, uint64_t off) {
  const uint64_t n = src.size() - off;
  std::vector<uint16_t> got(n + 3, 0xABCD), want(n + 3, 0xABCD);
  host::detail::store_span<T>(src.data() + off, n, got.data(), 3);
  for (uint64_t i = 0; i < n; ++i) pipecodec::detail::store<T>(want.data(), 3 + i, src[off + i]);
  CHECK(got == want);
}

}  // namespace

TEST_CASE("convert spans: every fp16 and bf16 pattern widens exactly as load<T>") {
#if defined(PIPECODEC_HOST_F16C)
  MESSAGE("fp16 spans use F16C");
#endif
  std::vector<uint16_t> h(65536 + 5);
  for (uint32_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i * 40503u);  // a permutation of all patterns
  for (uint64_t off : {0, 1, 5}) {
    const uint64_t n = 65536;
    std::vector<float> a(n), b(n);
    host::detail::load_span<dtype::f16>(h.data(), off, n, a.data());
    host::detail::load_span<dtype::bf16>(h.data(), off, n, b.data());
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      bad += f32_bits(a[i]) != f32_bits(pipecodec::detail::load<dtype::f16>(h.data(), off + i));
      bad += f32_bits(b[i]) != f32_bits(pipecodec::detail::load<dtype::bf16>(h.data(), off + i));
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("convert spans: fp32 narrows to fp16 and bf16 exactly as store<T>, NaN in any lane") {
  const auto f = f32_patterns();
  for (uint64_t off : {0, 3}) {
    check_narrowing<dtype::f16>(f, off);
    check_narrowing<dtype::bf16>(f, off);
  }
  for (int lane = 0; lane < 8; ++lane) {  // one NaN in a block of otherwise ordinary values
    std::vector<float> v = {1.0f, -2.5f, 65519.0f, 65520.0f, 6e-8f, -3e-8f, 0.333f, 1e-3f, 7.0f, 8.0f};
    v[size_t(lane)] = bit_cast<float>(0x7FA00001u);
    check_narrowing<dtype::f16>(v, 0);
    check_narrowing<dtype::bf16>(v, 0);
  }
}

TEST_CASE("convert spans: convert_span and zip_spans over lengths across chunks") {
  const dtype all[] = {dtype::f32, dtype::f16, dtype::bf16};
  for (uint64_t n : {uint64_t(0), uint64_t(7), uint64_t(255), uint64_t(256), uint64_t(1000)}) {
    std::vector<float> x(n + 2);
    for (uint64_t i = 0; i < x.size(); ++i) x[i] = float(int64_t(i * 7919 % 2001) - 1000) / 37.0f;
    for (dtype s : all)
      for (dtype d : all) {
        CAPTURE(n);
        std::vector<uint8_t> src((n + 2) * 4), got((n + 1) * 4, 0x5A), want((n + 1) * 4, 0x5A);
        pipecodec::detail::dispatch_dtype(s, [&](auto sc) {
          return pipecodec::detail::dispatch_dtype(d, [&](auto dc) {
            constexpr dtype S = decltype(sc)::value, D = decltype(dc)::value;
            for (uint64_t i = 0; i < n + 2; ++i) pipecodec::detail::store<S>(src.data(), i, x[i]);
            host::detail::convert_span<S, D>(src.data(), 2, got.data(), 1, n);
            for (uint64_t i = 0; i < n; ++i)
              pipecodec::detail::store<D>(want.data(), 1 + i, pipecodec::detail::load<S>(src.data(), 2 + i));
            std::vector<float> sum(n, -1.0f);
            host::detail::zip_spans<S, D>(src.data(), 2, got.data(), 1, n,
                                          [&](uint64_t j, const float* a, const float* b, uint64_t len) {
                                            for (uint64_t k = 0; k < len; ++k) sum[j + k] = a[k] - b[k];
                                          });
            for (uint64_t i = 0; i < n; ++i)
              REQUIRE(f32_bits(sum[i]) == f32_bits(pipecodec::detail::load<S>(src.data(), 2 + i) -
                                           pipecodec::detail::load<D>(want.data(), 1 + i)));
            return status::success;
          });
        });
        CHECK(got == want);
      }
  }
}

TEST_CASE("state spans: a - b and state + d in T equal the element-wise update, every fp16 pattern") {
  // b / state: a permutation of all 2^16 patterns (NaNs with payloads, infinities, subnormals);
  // a / d: the fp32 patterns, so sums overflow fp16, cancel, and meet NaN and Inf of both signs.
  const auto f = f32_patterns();
  const uint64_t n = 65536;
  std::vector<uint16_t> h(n + 5);
  for (uint32_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i * 40503u);
  for (uint64_t off : {0, 1, 5}) {
    CAPTURE(off);
    std::vector<float> got(n), d(f.begin() + long(off), f.begin() + long(off + n));
    host::detail::sub_span<dtype::f32, dtype::f16>(f.data(), off, h.data(), off, n, got.data());
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const float b = pipecodec::detail::load<dtype::f16>(h.data(), off + i);
      bad += f32_bits(got[i]) != f32_bits(pipecodec::detail::sub_rn(f[off + i], b));
    }
    CHECK(bad == 0);
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
      CAPTURE(t);
      pipecodec::detail::dispatch_dtype(t, [&](auto tc) {
        constexpr dtype T = decltype(tc)::value;
        std::vector<uint8_t> state((n + 5) * dtype_bytes(T)), want;
        for (uint64_t i = 0; i < n + 5; ++i)
          pipecodec::detail::store<T>(state.data(), i, pipecodec::detail::load<dtype::f16>(h.data(), i));
        if (T == dtype::f16) memcpy(state.data(), h.data(), state.size());  // NaN payloads kept
        want = state;
        for (uint64_t i = 0; i < n; ++i) {
          const float m = pipecodec::detail::load<T>(want.data(), off + i);
          pipecodec::detail::store<T>(want.data(), off + i, pipecodec::detail::add_rn(m, d[i]));
        }
        host::detail::accumulate_span<T>(state.data(), off, d.data(), n);
        CHECK(state == want);
        return status::success;
      });
    }
  }
  for (uint64_t len : {uint64_t(0), uint64_t(15), uint64_t(17), uint64_t(300)}) {  // tails of a block
    std::vector<uint16_t> s(len, 0x3C00), want(len, 0x3C00);
    std::vector<float> d(len, 0.5f);
    for (uint64_t i = 0; i < len; ++i) pipecodec::detail::store<dtype::f16>(want.data(), i, 1.5f);
    host::detail::accumulate_span<dtype::f16>(s.data(), 0, d.data(), len);
    CHECK(s == want);
  }
}
