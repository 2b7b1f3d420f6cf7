// Pins the bytes of host quantization: one FNV-1a hash over the payloads and decoded
// tensors of every spec x dtype combination, on inputs with edge values. Optimising the hot
// loops must not change it; it is built with the default flags and with
// -O3 -march=native -ffp-contract=fast, and both must print the recorded hash.
// Usage: payload_hash [EXPECTED_HEX]   (without an argument it only prints the hash)
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../common/data.hpp"
#include "pipecodec/pipecodec.hpp"

namespace pc = pipecodec;

namespace {

struct fnv {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 0x100000001b3ull;
  }
};

// Activation-like values with edge cases sprinkled in.
std::vector<float> inputs(uint64_t n) {
  std::vector<float> x = testdata::activations(n, 11);
  const uint32_t specials[] = {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0xFF7FFFFFu,
                               0x00000001u, 0x80000010u, 0x00800000u};
  for (size_t k = 0; k < 8 && 37 * k + 5 < n; ++k) x[37 * k + 5] = testdata::from_bits(specials[k]);
  return x;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__x86_64__) && defined(__GNUC__)
  // Built for a vector level this CPU may not have (the x86-64-v3/v4 flavours): skipped there.
#if defined(__AVX512BW__)
  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq")) return 77;
#endif
#if defined(__AVX512VBMI__)
  if (!__builtin_cpu_supports("avx512vbmi")) return 77;
#endif
#if defined(__GFNI__)
  if (!__builtin_cpu_supports("gfni")) return 77;
#endif
#if defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2")) return 77;
#endif
#endif
  fnv hash;
  unsigned cases = 0;
  const pc::shape shapes[] = {pc::shape(3, 333), pc::shape(1000), pc::shape(2, 64)};
  for (const pc::shape& shp : shapes) {
    const std::vector<float> x = inputs(shp.size());
    for (pc::dtype in_t : {pc::dtype::f32, pc::dtype::f16, pc::dtype::bf16}) {
      const std::vector<uint8_t> in = testdata::as_bytes(x, in_t);
      for (uint32_t bits = 1; bits <= 8; ++bits)
        for (int gi = 0; gi < 4; ++gi)
          for (auto sm : {pc::scale_mode::minmax, pc::scale_mode::absmax})
            for (auto r : {pc::rounding::nearest, pc::rounding::stochastic})
              for (pc::dtype sd : {pc::dtype::f32, pc::dtype::f16}) {
                pc::spec s;
                s.quant.bits = uint8_t(bits);
                s.quant.group = gi < 2 ? pc::group_kind::elements : pc::group_kind(gi);
                s.quant.group_size = gi == 0 ? 32 : 96;
                s.quant.scale = sm;
                s.quant.round = r;
                s.quant.scale_dtype = sd;
                std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
                if (!pc::ok(pc::host::encode(s, pc::const_tensor_view{in.data(), in_t, shp},
                                             payload.data(), payload.size(), nullptr, 0, 1234 + bits))) {
                  std::fprintf(stderr, "encode failed\n");
                  return 1;
                }
                hash.add(payload.data(), payload.size());
                for (pc::dtype out_t : {pc::dtype::f32, pc::dtype::f16, pc::dtype::bf16}) {
                  std::vector<uint8_t> out(shp.size() * pc::dtype_bytes(out_t));
                  if (!pc::ok(pc::host::decode(payload.data(), payload.size(),
                                               pc::tensor_view{out.data(), out_t, shp}))) {
                    std::fprintf(stderr, "decode failed\n");
                    return 1;
                  }
                  hash.add(out.data(), out.size());
                }
                ++cases;
              }
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, hash.h);
  std::printf("%u cases, payload+decode hash %s\n", cases, text);
  if (argc > 1 && std::strcmp(argv[1], text) != 0) {
    std::printf("MISMATCH: expected %s\n", argv[1]);
    return 1;
  }
  return 0;
}
