// Decoding on the device without a host round trip: the host cannot read the payload, so
// a first kernel validates the header and every group's stored parameters with the same
// functions as the host backend and records the outcome in the workspace's status area;
// the decode kernel then runs only when the payload was accepted, so a rejected payload
// leaves the output untouched (decode_accumulate relies on it).
#pragma once

#include "../../core/dispatch.hpp"
#include "../../core/topk_format.hpp"
#include "float_kernels.cuh"
#include "lowrank_kernels.cuh"
#include "plain_kernels.cuh"
#include "rotation_kernels.cuh"

namespace pipecodec::cuda::detail {

// Every block parses the header (a few dozen bytes); block 0 publishes the result, the
// others only check groups, so all writes to the status word agree (it was zeroed first).
// A template (like every kernel here) so that headers included by several translation
// units define it without breaking the one-definition rule.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    validate_kernel(const uint8_t* payload, uint64_t len, shape want, uint8_t* area) {
  PIPECODEC_SHARED(quant_payload, qp);
  PIPECODEC_SHARED(float_payload, fpl);
  PIPECODEC_SHARED(lowrank_payload, lrp);
  PIPECODEC_SHARED(int, check_groups);
  status_area* sa = reinterpret_cast<status_area*>(area);
  if (threadIdx.x == 0) {
    header h;
    status st = read_header(payload, len, h);
    uint32_t codec = 0;
    if (ok(st)) {
      codec = uint32_t(h.codec);
      if (h.codec == codec_id::quant) {
        quant_payload p;
        st = parse_quant_payload(payload, len, p);
        if (ok(st) && p.hdr.shp != want) st = status::shape_mismatch;
        if (ok(st) && !quant_padding_zero(p)) st = status::corrupt_payload;
        if (ok(st)) {
          qp = p;
          if (blockIdx.x == 0) *reinterpret_cast<quant_payload*>(area + parsed_offset) = p;
        }
      } else if (h.codec == codec_id::plain) {
        plain_payload p;
        st = parse_plain_payload(payload, len, p);
        if (ok(st) && p.hdr.shp != want) st = status::shape_mismatch;
        if (ok(st) && !plain_padding_zero(p)) st = status::corrupt_payload;
        if (ok(st) && blockIdx.x == 0) *reinterpret_cast<plain_payload*>(area + parsed_offset) = p;
      } else if (is_float_codec(h.codec)) {
        float_payload p;
        st = parse_float_payload(payload, len, p);
        if (ok(st) && p.hdr.shp != want) st = status::shape_mismatch;
        if (ok(st) && !float_padding_zero(p)) st = status::corrupt_payload;
        if (ok(st)) {
          fpl = p;
          if (blockIdx.x == 0) *reinterpret_cast<float_payload*>(area + parsed_offset) = p;
        }
      } else if (h.codec == codec_id::lowrank) {
        lowrank_payload p;
        st = parse_lowrank_payload(payload, len, p);
        if (ok(st) && p.hdr.shp != want) st = status::shape_mismatch;
        if (ok(st) && !lowrank_padding_zero(p)) st = status::corrupt_payload;
        if (ok(st)) {
          lrp = p;
          if (blockIdx.x == 0) *reinterpret_cast<lowrank_payload*>(area + parsed_offset) = p;
        }
      } else if (h.codec == codec_id::topk || h.codec == codec_id::randk) {
        // Checked as host::decode checks it, so a corrupt one gets the host's status; a valid
        // one is not_supported here: decode_topk decodes it.
        topk_payload p;
        st = parse_topk_payload(payload, len, p);
        if (ok(st) && p.desc.shared_mask) st = status::invalid_argument;
        if (ok(st) && p.hdr.shp != want) st = status::shape_mismatch;
        if (ok(st) && !topk_padding_zero(p)) st = status::corrupt_payload;
        if (ok(st)) st = status::not_supported;
      } else {
        st = status::not_supported;
      }
    }
    if (blockIdx.x == 0) {
      sa->codec = codec;
      if (!ok(st)) sa->code = st;
    }
    check_groups = !ok(st)                                 ? 0
                   : codec == uint32_t(codec_id::quant)    ? 1
                   : is_float_codec(codec_id(codec))       ? 2
                   : codec == uint32_t(codec_id::lowrank) ? 3
                                                           : 0;
  }
  __syncthreads();
  if (check_groups == 1) {
    for (uint64_t g = global_thread(); g < qp.layout.groups; g += thread_count())
      if (!valid_stored_group(qp, g)) atomicExch(reinterpret_cast<int*>(&sa->code), int(status::corrupt_payload));
  } else if (check_groups == 2) {
    for (uint64_t g = global_thread(); g < fpl.layout.groups; g += thread_count())
      if (!valid_float_group(fpl, g)) atomicExch(reinterpret_cast<int*>(&sa->code), int(status::corrupt_payload));
  } else if (check_groups == 3) {
    for (uint64_t k = global_thread(); k < lowrank_factor_count(lrp.layout); k += thread_count())
      if (!lowrank_factor_finite(lrp, k)) atomicExch(reinterpret_cast<int*>(&sa->code), int(status::corrupt_payload));
  }
}

template <dtype Out, bool Accumulate>
__global__ void __launch_bounds__(block_threads) decode_kernel(void* out, const uint8_t* area) {
  const status_area* sa = reinterpret_cast<const status_area*>(area);
  if (!ok(sa->code)) return;
  PIPECODEC_SHARED(rotation_buffer, rotated);  // the host cannot know whether the payload is rotated
  if (sa->codec == uint32_t(codec_id::quant)) {
    const quant_payload qp = *reinterpret_cast<const quant_payload*>(area + parsed_offset);
    decode_quant_elements(qp, rotated, store_decoded<Out, Accumulate>{out});
  } else if (is_float_codec(codec_id(sa->codec))) {
    decode_float_threads<Out, Accumulate>(*reinterpret_cast<const float_payload*>(area + parsed_offset), out);
  } else if (sa->codec == uint32_t(codec_id::lowrank)) {
    decode_lowrank_threads<Out, Accumulate>(*reinterpret_cast<const lowrank_payload*>(area + parsed_offset), out);
  } else {
    decode_plain_threads<Out, Accumulate>(*reinterpret_cast<const plain_payload*>(area + parsed_offset), out);
  }
}

}  // namespace pipecodec::cuda::detail
