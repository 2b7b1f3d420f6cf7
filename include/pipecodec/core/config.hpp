// Build configuration shared by every header: the host/device function marker and
// the IEEE arithmetic helpers that keep results bit-identical on both backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PIPECODEC_HD __host__ __device__ __forceinline__
#else
#define PIPECODEC_HD inline
#endif

// A host-only function forced inline into its caller's loop (nvcc's host pass included);
// PIPECODEC_HOST_FOLD_LAMBDA, after a lambda's parameters, the same for a lambda.
#if defined(__GNUC__)
#define PIPECODEC_HOST_FOLD __attribute__((always_inline)) inline
#define PIPECODEC_HOST_FOLD_LAMBDA __attribute__((always_inline))
#else
#define PIPECODEC_HOST_FOLD inline
#define PIPECODEC_HOST_FOLD_LAMBDA
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pipecodec supports little-endian hosts only"
#endif

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "pipecodec needs IEEE-754 binary32/binary64");

namespace pipecodec::detail {

template <class To, class From>
PIPECODEC_HD To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast size mismatch");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

// Correctly rounded arithmetic. On the device the _rn intrinsics forbid nvcc from
// contracting into FMA (its default); they do not survive --use_fast_math or -ftz=true, which
// make them flush subnormals (docs/CUDA.md): build the codec without those. On the host the plain
// operators are IEEE; the codec math is written so that no rounded product ever feeds
// an addition (products are exact or stand alone), so -ffp-contract=fast cannot change
// a result either.
PIPECODEC_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
PIPECODEC_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
PIPECODEC_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PIPECODEC_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
PIPECODEC_HD double dadd_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
PIPECODEC_HD double dsub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
PIPECODEC_HD double dmul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
PIPECODEC_HD double ddiv_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

PIPECODEC_HD double dsqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return __builtin_sqrt(a);
#endif
}

constexpr float flt_max = 3.40282346638528859812e+38F;

PIPECODEC_HD bool is_finite(float x) {
  return (bit_cast<uint32_t>(x) & 0x7F800000u) != 0x7F800000u;
}

PIPECODEC_HD uint64_t align16(uint64_t n) { return (n + 15u) & ~uint64_t(15); }
PIPECODEC_HD uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace pipecodec::detail
