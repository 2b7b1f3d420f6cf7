// The one place where runtime choices (element dtype, bit width) become template arguments.
// Each callback receives std::integral_constant values; unknown values yield not_supported.
#pragma once

#include <type_traits>
#include <utility>

#include "dtype.hpp"
#include "status.hpp"

namespace pipecodec::detail {

template <dtype T>
using dtype_c = std::integral_constant<dtype, T>;
template <uint32_t B>
using bits_c = std::integral_constant<uint32_t, B>;

template <class F>
status dispatch_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(dtype_c<dtype::f32>{});
    case dtype::f16: return f(dtype_c<dtype::f16>{});
    case dtype::bf16: return f(dtype_c<dtype::bf16>{});
  }
  return status::not_supported;
}

// Host and device: kernels that learn the bit width from a payload header only on the
// device (decoding) dispatch with the same switch. Host callers pass host lambdas, hence
// the exec-check pragma.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class F>
PIPECODEC_HD status dispatch_bits(uint32_t bits, F&& f) {
  switch (bits) {
    case 1: return f(bits_c<1>{});
    case 2: return f(bits_c<2>{});
    case 3: return f(bits_c<3>{});
    case 4: return f(bits_c<4>{});
    case 5: return f(bits_c<5>{});
    case 6: return f(bits_c<6>{});
    case 7: return f(bits_c<7>{});
    case 8: return f(bits_c<8>{});
    default: return status::not_supported;
  }
}


// dtype x bits, the combination every quantization kernel is instantiated over.
template <class F>
status dispatch_dtype_bits(dtype t, uint32_t bits, F&& f) {
  return dispatch_dtype(t, [&](auto tc) {
    return dispatch_bits(bits, [&](auto bc) { return f(tc, bc); });
  });
}

}  // namespace pipecodec::detail
