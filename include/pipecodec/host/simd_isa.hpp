// Which x86 vector extensions the host backend uses, from what the compiler targets, and the
// intrinsics header. Every use has a portable fallback with identical results.
// - PIPECODEC_HOST_F16C: fp16 <-> fp32 conversion instructions (with AVX);
// - PIPECODEC_HOST_AVX512: AVX-512 BW + VL + DQ (16 fp32 lanes, mask registers);
// - PIPECODEC_HOST_GFNI: GFNI + AVX-512 VBMI (bit-plane transposes by GF(2) affine steps).
#pragma once

#if defined(__F16C__) && defined(__AVX__)
#define PIPECODEC_HOST_F16C 1
#endif

#if defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define PIPECODEC_HOST_AVX512 1
#if defined(__GFNI__) && defined(__AVX512VBMI__)
#define PIPECODEC_HOST_GFNI 1
#endif
#endif

#if defined(__AVX2__) || defined(__F16C__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics warn of their own self-initialised placeholder once inlined
// (GCC bug 105593); the warning is tied to the header's lines, so it is silenced only there.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
