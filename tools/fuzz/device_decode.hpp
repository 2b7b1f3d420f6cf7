// Device harness (a): arbitrary bytes through host::decode and the CUDA decoder on the
// emulated GPU. Both must give the same status; on success the same output bytes, on
// rejection an untouched output (both backends document it).
//
// Input: mode byte | payload, or for a shared-mask decode: mode byte | mask length (u16) |
// mask payload | values payload. Mode bits 0-1: output dtype; bit 2: accumulate; bits 3-4:
// the call (0: the one a payload of the header's codec needs, decode or decode_topk; 1: the
// same, naming the codec as a caller that configured it does; 2: decode_shared; 3: the
// declared element count in the other rank, which both must reject).
#pragma once

#include "../output_limit.hpp"
#include "device_common.hpp"

namespace pcfuzz {

// Largest declared output a device decode allocates: an emulated element costs about a
// microsecond per kernel, and the harness aims at hundreds of inputs per second.
constexpr uint64_t device_max_elements = uint64_t(1) << 14;

struct device_decode_case {
  std::vector<uint8_t> payload, mask;
  pipecodec::codec_id codec{};  // from the header; {} when unreadable
  bool shared = false, name_codec = false, accumulate = false;
  pipecodec::dtype type = pipecodec::dtype::f32;
  pipecodec::shape shp = pipecodec::shape(16);

  bool topk() const { return codec == pipecodec::codec_id::topk || codec == pipecodec::codec_id::randk; }
};

// An empty buffer as a valid pointer with length 0 (a zero-byte message), on both backends: a
// null pointer is the caller's error, which each backend reports before reading a payload.
inline const uint8_t* bytes_of(const std::vector<uint8_t>& v) {
  static const uint8_t none = 0;
  return v.empty() ? &none : v.data();
}

inline pipecodec::status host_decode_case(const device_decode_case& c, std::vector<uint8_t>& out) {
  using namespace pipecodec;
  const tensor_view v{out.data(), c.type, c.shp};
  const void* p = bytes_of(c.payload);
  const size_t len = c.payload.size();
  if (c.shared)
    return c.accumulate ? host::decode_shared_accumulate(p, len, bytes_of(c.mask), c.mask.size(), v)
                        : host::decode_shared(p, len, bytes_of(c.mask), c.mask.size(), v);
  return c.accumulate ? host::decode_accumulate(p, len, v) : host::decode(p, len, v);
}

// The CUDA decoder a caller would use for this payload, on exact-size device copies.
inline pipecodec::status device_decode_case_run(const device_decode_case& c, std::vector<uint8_t>& out) {
  using namespace pipecodec;
  device_context& ctx = device_context::get();
  const bool topk = c.shared || c.topk() || (c.name_codec && c.codec == codec_id{});
  const uint64_t ws_size = detail::workspace_request(
      topk ? detail::topk_decode_workspace(c.shp.size(), c.shared) : detail::workspace_status_bytes);
  device_bytes payload(c.payload.size(), &c.payload), mask(c.mask.size(), &c.mask), dout(out.size(), &out),
      ws{size_t(ws_size)};
  const tensor_view v{out.empty() ? nullptr : dout.get(), c.type, c.shp};
  const void* p = payload.get();
  const void* m = mask.get();
  const size_t len = c.payload.size();
  const codec_id named = c.name_codec ? c.codec : codec_id{};
  status st = status::success;
  if (c.shared)
    st = c.accumulate ? cuda::decode_shared_accumulate(p, len, m, c.mask.size(), v, ws.get(), ws_size, ctx.stream)
                      : cuda::decode_shared(p, len, m, c.mask.size(), v, ws.get(), ws_size, ctx.stream);
  else if (topk)
    st = c.accumulate ? cuda::decode_topk_accumulate(p, len, v, ws.get(), ws_size, ctx.stream, named)
                      : cuda::decode_topk(p, len, v, ws.get(), ws_size, ctx.stream, named);
  else
    st = c.accumulate ? cuda::decode_accumulate(p, len, v, ws.get(), ws_size, ctx.stream)
                      : cuda::decode(p, len, v, ws.get(), ws_size, ctx.stream);
  st = ctx.finish(st, ws.get());
  out = dout.read(out.size());
  return st;
}

// Decodes `c` with both backends: same status, same bytes, untouched output on rejection.
// Accumulates into finite values (NaN payloads are not part of the byte-identity contract).
inline pipecodec::status check_decode_matches(const device_decode_case& c) {
  using namespace pipecodec;
  const std::vector<uint8_t> before = ramp_bytes(c.type, c.shp.size(), 23, 0.375F);
  std::vector<uint8_t> host_out = before, device_out = before;
  const status hs = host_decode_case(c, host_out);
  const status ds = device_decode_case_run(c, device_out);
  PCFUZZ_CHECK(hs == ds, "host %s, device %s (codec %d, shared %d, accumulate %d, dtype %s)", to_string(hs),
               to_string(ds), int(c.codec), int(c.shared), int(c.accumulate), to_string(c.type));
  if (!ok(hs)) {
    PCFUZZ_CHECK(host_out == before, "the host wrote to the output of a rejected payload (%s)", to_string(hs));
    PCFUZZ_CHECK(device_out == before, "the device wrote to the output of a rejected payload (%s)", to_string(ds));
  } else {
    const long d = first_difference(host_out, device_out);
    PCFUZZ_CHECK(d < 0, "outputs differ at byte %ld of %zu (codec %d, dtype %s, accumulate %d)", d, host_out.size(),
                 int(c.codec), to_string(c.type), int(c.accumulate));
  }
  return hs;
}

int fuzz_device_decode(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  reader r(data, size);
  const uint8_t mode = r.u8();
  device_decode_case c;
  c.type = dtype_from(mode & 3);
  c.accumulate = (mode & 4) != 0;
  const int call = (mode >> 3) & 3;
  c.shared = call == 2;
  c.name_codec = call == 1;
  if (c.shared) {
    const size_t mask_len = std::min<size_t>(r.u16(), r.remaining());
    c.mask.assign(r.rest(), r.rest() + mask_len);
    for (size_t i = 0; i < mask_len; ++i) (void)r.u8();
  }
  c.payload.assign(r.rest(), r.rest() + r.remaining());
  header h;
  if (ok(read_header(c.payload.data(), c.payload.size(), h))) {
    c.codec = h.codec;
    // The declared shape only when the buffer could hold such a payload (as the host
    // harness does): otherwise both reject it on size anyway.
    if (h.total_bytes <= c.payload.size() && tools::output_fits(h.shp, device_max_elements)) c.shp = h.shp;
    if (call == 3) {
      c.shp = c.shp.ndim == 1 ? shape(1, c.shp.cols) : shape(c.shp.rows * c.shp.cols);
      PCFUZZ_CHECK(!ok(check_decode_matches(c)), "accepted the declared elements in another rank");
      return 0;
    }
  }
  (void)check_decode_matches(c);
  return 0;
}

}  // namespace pcfuzz
