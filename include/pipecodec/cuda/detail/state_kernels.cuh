// Element-wise building blocks of the CUDA stateful schemes (cuda/ef.cuh, ef21.cuh, aqsgd.cuh).
// Sources give the value a scheme encodes (x + e, x - g, a - m of a batch row); sinks take
// each decoded value and update the state; both are plain functors, so the same objects feed
// the fused quantization kernels (detail/quant_encode.cuh) and, for other codecs, a grid loop
// (for_each) around the ordinary encode and decode calls. Every update is the host's: one
// add_rn / sub_rn in fp32, one rounding to the state dtype (host/state_common.hpp).
#pragma once

#include "../codec.cuh"

namespace pipecodec::cuda::detail {

// Up to three device status words that must all be success for a guarded loop to run (the
// validation results of a decode); null entries are ignored.
struct status_guard {
  const status* s[3] = {nullptr, nullptr, nullptr};
  __device__ __forceinline__ bool pass() const {
    for (const status* p : s)
      if (p != nullptr && !ok(*p)) return false;
    return true;
  }
};

template <class F>
__global__ void __launch_bounds__(block_threads) for_each_kernel(uint64_t n, F f, status_guard guard) {
  if (!guard.pass()) return;
  for (uint64_t i = global_thread(); i < n; i += thread_count()) f(i);
}

// f(i) for i < n on `stream`, skipped on the device unless `guard` passes.
template <class F>
inline status for_each(uint64_t n, F f, cudaStream_t stream, status_guard guard = {}) {
  if (n == 0) return status::success;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;
  launch_over<for_each_kernel<F>>(n, block_threads, dg, block_threads, 0, stream, n, f, guard);
  return last_launch_status();
}

// A tensor whose dtype is known at run time. The state functors take their dtypes this way
// (a warp-uniform switch per element, hidden behind the memory traffic) so each scheme
// instantiates the quantization kernels once per bit width and rounding, not once per pair
// of input and state dtypes.
struct dyn_tensor {
  void* p;
  dtype t;
  __device__ __forceinline__ float load(uint64_t i) const {
    return t == dtype::f32 ? pipecodec::detail::load<dtype::f32>(p, i)
           : t == dtype::f16 ? pipecodec::detail::load<dtype::f16>(p, i)
                             : pipecodec::detail::load<dtype::bf16>(p, i);
  }
  __device__ __forceinline__ void store(uint64_t i, float v) const {
    if (t == dtype::f32) pipecodec::detail::store<dtype::f32>(p, i, v);
    else if (t == dtype::f16) pipecodec::detail::store<dtype::f16>(p, i, v);
    else pipecodec::detail::store<dtype::bf16>(p, i, v);
  }
};

inline dyn_tensor dyn(const void* p, dtype t) { return dyn_tensor{const_cast<void*>(p), t}; }

// v = x + e (classic EF).
struct sum_source {
  dyn_tensor x, e;
  __device__ __forceinline__ float operator()(uint64_t i) const { return add_rn(x.load(i), e.load(i)); }
};

// x - g (EF21).
struct diff_source {
  dyn_tensor x, g;
  __device__ __forceinline__ float operator()(uint64_t i) const { return sub_rn(x.load(i), g.load(i)); }
};

// EF residual: e = v - d.
struct residual_sink {
  dyn_tensor e;
  __device__ __forceinline__ void operator()(uint64_t i, float v, float d) const { e.store(i, sub_rn(v, d)); }
};

// g += d, what decode_accumulate does.
struct accumulate_sink {
  dyn_tensor g;
  __device__ __forceinline__ void operator()(uint64_t i, float, float d) const { g.store(i, add_rn(g.load(i), d)); }
};

// out[i] = src(i) in fp32 (the input of a non-fused encode).
template <class Src>
struct materialize {
  Src src;
  float* out;
  __device__ __forceinline__ void operator()(uint64_t i) const { out[i] = src(i); }
};

// sink(i, src(i), d[i]) for decoded values d of a non-fused encode.
template <class Src, class Sink>
struct apply_decoded {
  Src src;
  Sink sink;
  const float* d;
  __device__ __forceinline__ void operator()(uint64_t i) const { sink(i, src(i), d[i]); }
};

// Converting copy; the same dtype moves raw bits, as the host's memcpy does.
struct convert_op {
  dyn_tensor src, dst;
  __device__ __forceinline__ void operator()(uint64_t i) const {
    const uint32_t w = dtype_bytes(src.t);
    if (src.t == dst.t) store_raw(dst.p, i, w, load_raw(src.p, i, w, true), true);
    else dst.store(i, src.load(i));
  }
};

// cuda::encode of an fp32 tensor (the scratch of a non-fused step). The stateful schemes call
// this narrower switch so a translation unit using them instantiates the quantization kernels
// for fp32 input only, not for every input dtype as cuda::encode does.
inline status encode_f32(const spec& s, const float* in, const shape& shp, void* payload, size_t capacity,
                         void* workspace, size_t workspace_size, const randomness& rnd, cudaStream_t stream,
                         size_t* written, tensor_view lowrank_q = {}) {
  const uint64_t seed = rnd.seed;
  const const_tensor_view v(in, dtype::f32, shp);
  switch (s.codec) {
    case codec_id::quant: {
      quant_plan P;
      status st = plan_quant(s.quant, shp, in, payload, capacity, workspace, workspace_size, P);
      if (ok(st) && pipecodec::detail::overlaps(in, P.L.n * 4, payload, P.L.total)) st = status::aliasing;
      if (ok(st)) st = check_sample_keyed(s.quant.rng, rnd, shp, P.L.group_len);
      if (ok(st))
        st = launch_quant(tensor_source<dtype::f32>{in}, no_sink{}, s.quant, P, dtype::f32, shp, payload, workspace,
                          rnd, stream);
      if (ok(st) && written) *written = size_t(P.L.total);
      return st;
    }
    case codec_id::plain:
      return encode_plain(s.plain, v, payload, capacity, workspace, workspace_size, stream, written);
    case codec_id::topk:
    case codec_id::randk:
      return encode_topk(s, v, payload, capacity, workspace, workspace_size, rnd, stream, written);
    case codec_id::fp8:
    case codec_id::mx:
      return encode_float(s.codec, s.flt, v, payload, capacity, workspace, workspace_size, rnd, stream, written);
    case codec_id::lowrank:
      if (lowrank_q.data != nullptr)
        return lowrank_encode(s, v, lowrank_q, payload, capacity, workspace, workspace_size, seed, stream, written);
      return encode_lowrank(s.lowrank, v, nullptr, payload, capacity, workspace, workspace_size, seed, stream, written);
    default: return status::not_supported;
  }
}

// Decode (or accumulate-decode) of any codec, validated on the device; `expect` as in
// decode_any. The status word sits at the start of the aligned workspace (read_status).
template <bool Accumulate>
inline status decode_codec(codec_id codec, const void* payload, size_t len, tensor_view out, void* workspace,
                           size_t workspace_size, cudaStream_t stream, uint8_t expect = 0) {
  if (codec == codec_id::topk || codec == codec_id::randk)
    return decode_topk<Accumulate>(payload, len, out, workspace, workspace_size, stream, expect, codec);
  return decode_any<Accumulate>(payload, len, out, workspace, workspace_size, stream, expect);
}

// The device status word of a workspace used by a decode.
inline const status* status_word(const void* workspace) {
  return reinterpret_cast<const status*>(align_workspace(const_cast<void*>(workspace)));
}

// Splits a CUDA state workspace (any alignment) into an fp32 scratch of n elements and the
// codec's workspace (which aligns itself).
struct state_ws {
  float* f32 = nullptr;
  void* codec = nullptr;
  size_t codec_bytes = 0;
};

inline size_t state_ws_bytes(uint64_t n, size_t codec_bytes) {
  return size_t(workspace_request(align16(4 * n))) + codec_bytes;
}

inline status split_state_ws(void* ws, size_t size, uint64_t n, size_t codec_need, state_ws& out) {
  if (size < state_ws_bytes(n, codec_need)) return status::workspace_too_small;
  if (ws == nullptr) return status::invalid_argument;
  uint8_t* base = align_workspace(ws);
  out.f32 = reinterpret_cast<float*>(base);
  out.codec = base + align16(4 * n);
  out.codec_bytes = size - size_t(static_cast<uint8_t*>(out.codec) - static_cast<uint8_t*>(ws));
  return status::success;
}

}  // namespace pipecodec::cuda::detail
