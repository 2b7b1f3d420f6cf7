// Host backend of the lowrank codec (core/lowrank_format.hpp has the arithmetic both
// backends share): Q0, then P = M Q0 in double, Gram-Schmidt on P in the payload, Q = M^T P.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/lowrank_format.hpp"
#include "buffer_checks.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// `count` sums at once, each over `len` terms in canonical_sum's order; add(i, acc) adds
// term i of sum k to acc[k] for every k.
constexpr uint32_t lowrank_max_sums = 8 * max_lowrank_rank;

template <class Add>
inline void canonical_sums(uint64_t len, uint32_t count, double* out, Add add) {
  for (uint32_t k = 0; k < count; ++k) out[k] = 0.0;
  double lane[lowrank_lanes][lowrank_max_sums];
  for (uint64_t base = 0; base < len; base += lowrank_chunk) {
    for (uint32_t l = 0; l < lowrank_lanes; ++l)
      for (uint32_t k = 0; k < count; ++k) lane[l][k] = 0.0;
    // Term i goes to lane i mod 32, each lane's terms in increasing order (as canonical_sum),
    // visited in memory order so the 32 lanes' sums proceed side by side.
    const uint64_t end = len - base < lowrank_chunk ? len : base + lowrank_chunk;
    for (uint64_t i = base; i < end; ++i) add(i, lane[i & (lowrank_lanes - 1)]);  // base is a multiple of 32
    for (uint32_t off = lowrank_lanes / 2; off > 0; off /= 2)
      for (uint32_t l = 0; l < off; ++l)
        for (uint32_t k = 0; k < count; ++k) lane[l][k] += lane[l + off][k];
    for (uint32_t k = 0; k < count; ++k) out[k] += lane[0][k];
  }
}

// Q0: the caller's warm Q where its column has a non-zero entry, the seed's otherwise.
inline void lowrank_q0(const lowrank_layout& L, const float* warm, uint64_t seed, float* q0) {
  const uint32_t R = L.rank;
  for (uint32_t r = 0; r < R; ++r) {
    bool use_warm = false;
    for (uint64_t j = 0; warm != nullptr && j < L.cols && !use_warm; ++j) use_warm = finite_or_zero(warm[j * R + r]) != 0.0f;
    for (uint64_t j = 0; j < L.cols; ++j)
      q0[j * R + r] = use_warm ? finite_or_zero(warm[j * R + r]) : lowrank_random(seed, R, j, r);
  }
}

template <dtype In>
inline float lowrank_input(const void* x, uint64_t i) {
  return finite_or_zero(load<In>(x, i));
}

// Gram-Schmidt on the columns of P (stored in the payload) from M Q0 in `pd`.
inline void lowrank_orthonormalize(const lowrank_layout& L, const double* pd, uint8_t* P) {
  const uint32_t R = L.rank;
  auto at = [&](uint64_t i, uint32_t c) { return load_factor(P, i * R + c); };
  for (uint32_t c = 0; c < R; ++c) {
    double mx = 0.0;
    for (uint64_t i = 0; c < L.rows && i < L.rows; ++i) {  // columns c >= rows stay zero
      const double a = pd[i * R + c] < 0 ? -pd[i * R + c] : pd[i * R + c];
      mx = a > mx ? a : mx;
    }
    for (uint64_t i = 0; i < L.rows; ++i) store_factor(P, i * R + c, mx == 0.0 ? 0.0f : scaled_column_value(pd[i * R + c], mx));
    if (mx == 0.0) continue;
    const double before = canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(at(i, c), at(i, c)); });
    for (uint32_t k = 0; k < lowrank_projection_passes * c; ++k) {
      const uint32_t p = k % c;
      const float d = float(canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(at(i, c), at(i, p)); }));
      for (uint64_t i = 0; i < L.rows; ++i) store_factor(P, i * R + c, project_out(at(i, c), d, at(i, p)));
    }
    const double ss = canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(at(i, c), at(i, c)); });
    const double norm = dsqrt_rn(ss);
    const bool dependent = lowrank_dependent(ss, before);
    for (uint64_t i = 0; i < L.rows; ++i)
      store_factor(P, i * R + c, dependent ? 0.0f : normalized_value(at(i, c), norm));
  }
}

template <dtype In>
inline void lowrank_factors(const lowrank_layout& L, const void* x, const float* warm, uint64_t seed,
                            uint8_t* ws, uint8_t* payload) {
  const lowrank_workspace W = make_lowrank_workspace(L);
  float* q0 = reinterpret_cast<float*>(ws + W.q0_offset);
  double* pd = reinterpret_cast<double*>(ws + W.pd_offset);
  const uint32_t R = L.rank;
  lowrank_q0(L, warm, seed, q0);
  for (uint64_t i = 0; i < L.rows; ++i)  // P = M Q0, one row at a time
    canonical_sums(L.cols, R, pd + i * R, [&](uint64_t j, double* acc) {
      const float m = lowrank_input<In>(x, i * L.cols + j);
      for (uint32_t r = 0; r < R; ++r) acc[r] += exact_mul(m, q0[j * R + r]);
    });
  uint8_t* P = payload + L.p_offset;
  uint8_t* Q = payload + L.q_offset;
  lowrank_orthonormalize(L, pd, P);
  constexpr uint64_t block = lowrank_max_sums / max_lowrank_rank;  // Q = M^T P, 8 columns at a time
  for (uint64_t j0 = 0; j0 < L.cols; j0 += block) {
    const uint32_t cnt = uint32_t(L.cols - j0 < block ? L.cols - j0 : block);
    double q[lowrank_max_sums];
    canonical_sums(L.rows, cnt * R, q, [&](uint64_t i, double* acc) {
      for (uint32_t jj = 0; jj < cnt; ++jj) {
        const float m = lowrank_input<In>(x, i * L.cols + j0 + jj);
        for (uint32_t r = 0; r < R; ++r) acc[jj * R + r] += exact_mul(m, load_factor(P, i * R + r));
      }
    });
    for (uint32_t k = 0; k < cnt * R; ++k) store_factor(Q, j0 * R + k, to_float_sat(q[k]));
  }
}

// `warm`: cols x rank floats of the previous Q, or null for a cold start.
inline status encode_lowrank(const lowrank_params& l, const_tensor_view in, const float* warm, void* payload,
                             size_t capacity, void* workspace, size_t workspace_size, uint64_t seed, size_t* written) {
  if (!valid_lowrank_params(l)) return status::invalid_spec;
  lowrank_layout L;
  if (!make_lowrank_layout(l, in.shp, L)) return status::size_overflow;
  status st = check_encode_buffers(in, L.n, payload, capacity, L.total);
  if (ok(st)) st = check_encode_workspace(in, payload, L.total, workspace, workspace_size, make_lowrank_workspace(L).used);
  if (!ok(st)) return st;
  uint8_t* p = static_cast<uint8_t*>(payload);
  write_payload_header(p, codec_id::lowrank, in, L.total, [&](uint8_t* params) { write_lowrank_params(params, l, seed); });
  memset(p + L.p_offset, 0, L.total - L.p_offset);
  st = dispatch_dtype(in.type, [&](auto tc) {
    lowrank_factors<decltype(tc)::value>(L, in.data, warm, seed, align16_ptr(workspace), p);
    return status::success;
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

// Validates the whole payload before writing any output.
template <bool Accumulate>
inline status decode_lowrank(const void* payload, size_t len, tensor_view out) {
  lowrank_payload lp;
  status st = parse_lowrank_payload(payload, len, lp);
  if (!ok(st)) return st;
  st = check_decode_output(lp.hdr, lp.layout.n, out, payload);
  if (!ok(st)) return st;
  if (!lowrank_padding_zero(lp)) return status::corrupt_payload;
  for (uint64_t k = 0; k < lowrank_factor_count(lp.layout); ++k)
    if (!lowrank_factor_finite(lp, k)) return status::corrupt_payload;
  const lowrank_layout& L = lp.layout;
  return dispatch_dtype(out.type, [&](auto oc) {
    constexpr dtype O = decltype(oc)::value;
    const uint8_t* Q = lp.bytes + L.q_offset;
    constexpr uint64_t block = 8;  // elements whose sums (lowrank_element's, in order of r) run side by side
    for (uint64_t i = 0; i < L.rows; ++i) {
      double p[max_lowrank_rank];
      for (uint32_t r = 0; r < L.rank; ++r) p[r] = load_factor(lp.bytes + L.p_offset, i * L.rank + r);
      for (uint64_t j0 = 0; j0 < L.cols; j0 += block) {
        const uint64_t cnt = L.cols - j0 < block ? L.cols - j0 : block;
        double acc[block] = {};
        for (uint32_t r = 0; r < L.rank; ++r)
          for (uint64_t k = 0; k < cnt; ++k) acc[k] += p[r] * double(load_factor(Q, (j0 + k) * L.rank + r));
        for (uint64_t k = 0; k < cnt; ++k) {
          const uint64_t e = i * L.cols + j0 + k;
          const float v = to_float_sat(acc[k]);
          store<O>(out.data, e, Accumulate ? add_rn(load<O>(out.data, e), v) : v);  // v is finite
        }
      }
    }
    return status::success;
  });
}

}  // namespace pipecodec::host::detail
