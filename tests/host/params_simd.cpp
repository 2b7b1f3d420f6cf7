// host/params_simd.hpp against the scalar code it replaces, lane by lane and bit for bit:
// make_params_x16 (or its redo mask) vs make_params, stored_groups_valid_x16 vs
// valid_stored_group. Statistics are drawn from the values where the arithmetic changes
// course: zeros of both signs, empty groups, fp16 subnormals and the fp16 range's edges,
// scale caps near FLT_MAX, and random values at every magnitude.
// Exits 77 (skipped) where the build or the CPU has no AVX-512 path.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "pipecodec/pipecodec.hpp"

#if defined(PIPECODEC_HOST_AVX512)
namespace pc = pipecodec;
using namespace pipecodec::detail;
using pipecodec::host::detail::make_params_x16;
using pipecodec::host::detail::params_x16;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

float edge_value(std::mt19937& rng) {
  static const float edges[] = {0.0F, -0.0F, 1.0F, -1.0F, 65504.0F, -65504.0F, 65520.0F, -65520.0F, 65519.0F,
                                6.103515625e-05F, -6.103515625e-05F, 5.9604644775390625e-08F, 2.9802322e-08F,
                                1e-30F, -1e-30F, 1.1754944e-38F, 1e-45F, -1e-45F, flt_max, -flt_max,
                                1.7e38F, -1.7e38F, 3e38F, 1e20F, -1e20F};
  const uint32_t pick = rng() % 4;
  if (pick == 0) return edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
  if (pick == 1) {  // any finite float
    for (;;) {
      const uint32_t u = rng();
      float f;
      memcpy(&f, &u, 4);
      if ((u & 0x7F800000u) != 0x7F800000u) return f;
    }
  }
  const float mag = std::ldexp(1.0F, int(rng() % 60) - 40);
  return (float(rng() % 2000000) / 1000000.0F - 1.0F) * mag;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq")) {
    std::printf("no AVX-512 on this CPU: skipped\n");
    return 77;
  }
  std::mt19937 rng(12345);
  uint64_t lanes = 0, mismatches = 0, redone = 0;
  for (uint32_t bits = 1; bits <= 8; ++bits)
    for (pc::scale_mode mode : {pc::scale_mode::minmax, pc::scale_mode::absmax})
      for (pc::dtype sd : {pc::dtype::f32, pc::dtype::f16})
        for (int batch = 0; batch < 4000; ++batch) {
          pc::quant_params q;
          q.bits = uint8_t(bits);
          q.scale = mode;
          q.scale_dtype = sd;
          alignas(64) float lo[16], hi[16];
          for (int k = 0; k < 16; ++k) {
            float a = edge_value(rng), b = edge_value(rng);
            if (rng() % 8 != 0 && a > b) std::swap(a, b);  // one in eight may be empty (lo > hi)
            if (rng() % 16 == 0) b = a;                     // a single distinct value
            lo[k] = a;
            hi[k] = b;
          }
          params_x16 P;
          const __mmask16 redo = make_params_x16(_mm512_load_ps(lo), _mm512_load_ps(hi), q, P);
          for (int k = 0; k < 16; ++k, ++lanes) {
            const group_stats st{lo[k], hi[k]};
            const group_params want = make_params(st, q);
            const quant_consts c = consts_for(bits, mode);
            // make_params' first scale, before any cap: the redo mask must say whether it is kept.
            const bool capped = want.scale != P.scale[k] || !decodes_finite(P.scale[k], P.offset[k], c);
            if (redo >> k & 1u) {
              ++redone;
              if (decodes_finite(P.scale[k], P.offset[k], c)) ++mismatches;
              continue;
            }
            if (capped || bits_of(want.scale) != bits_of(P.scale[k]) || bits_of(want.offset) != bits_of(P.offset[k]) ||
                bits_of(want.pre) != bits_of(P.pre[k]) || bits_of(want.inv) != bits_of(P.inv[k])) {
              if (++mismatches <= 10)
                std::printf("bits %u mode %d sd %d lo %a hi %a: scalar %a %a %a %a, x16 %a %a %a %a\n", bits, int(mode),
                            int(sd), double(lo[k]), double(hi[k]), double(want.scale), double(want.offset),
                            double(want.pre), double(want.inv), double(P.scale[k]), double(P.offset[k]),
                            double(P.pre[k]), double(P.inv[k]));
            }
          }
        }
  // The decoder's batch check against the scalar one on payloads with random damage to the
  // scale and offset section.
  uint64_t payloads = 0, disagreements = 0;
  for (int round = 0; round < 3000; ++round) {
    pc::spec s;
    s.codec = pc::codec_id::quant;
    s.quant.bits = uint8_t(1 + rng() % 8);
    s.quant.group_size = 32 * (1 + rng() % 4);
    s.quant.scale = rng() % 2 ? pc::scale_mode::minmax : pc::scale_mode::absmax;
    s.quant.scale_dtype = rng() % 2 ? pc::dtype::f16 : pc::dtype::f32;
    const pc::shape shp(uint64_t(s.quant.group_size) * 16 * (1 + rng() % 3));
    std::vector<float> x(shp.size());
    for (float& v : x) v = edge_value(rng);
    std::vector<uint8_t> p(pc::encoded_bytes(s, shp));
    if (!pc::ok(pc::host::encode(s, pc::const_tensor_view{x.data(), pc::dtype::f32, shp}, p.data(), p.size(), nullptr, 0, 7)))
      return 2;
    quant_payload qp;
    if (!pc::ok(parse_quant_payload(p.data(), p.size(), qp))) return 3;
    const uint64_t params_bytes = qp.layout.groups * qp.layout.scale_bytes * (qp.layout.has_offset ? 2u : 1u);
    for (int flips = int(rng() % 4); flips > 0; --flips) p[qp.layout.params_offset + rng() % params_bytes] ^= uint8_t(1u << (rng() % 8));
    for (uint64_t g0 = 0; g0 + 16 <= qp.layout.groups; g0 += 16, ++payloads) {
      bool scalar = true;
      for (uint64_t k = 0; k < 16; ++k) scalar = scalar && valid_stored_group(qp, g0 + k);
      if (scalar != pipecodec::host::detail::stored_groups_valid_x16(qp, g0)) ++disagreements;
    }
  }
  std::printf("%llu lanes, %llu redone by make_params, %llu mismatches; %llu group batches checked, %llu disagreements\n",
              (unsigned long long)lanes, (unsigned long long)redone, (unsigned long long)mismatches,
              (unsigned long long)payloads, (unsigned long long)disagreements);
  return mismatches == 0 && disagreements == 0 && redone > 0 ? 0 : 1;
}
#else
#include <cstdio>
int main() {
  std::printf("built without the AVX-512 path: skipped\n");
  return 77;
}
#endif
