// Device harness (c): the EF21 receive step, host against CUDA on the emulated GPU, with
// fuzzer bytes as the payload: ef21_decode(expected codec, payload, g, out) on both. Same
// status; on success the same g and out bytes (g += decoded, out = g in fp32); on rejection g
// and out untouched.
//
// Input: codec byte (the receiver's configured codec, 1..7) | g dtype byte | shape (rows u8:
// 0 for 1-D; cols u16 % 1200) | payload.
#pragma once

#include "device_decode.hpp"

namespace pcfuzz {

int fuzz_device_state(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  reader r(data, size);
  const codec_id expected = codec_id(1 + r.u8() % 7);
  const dtype gt = dtype_from(r.u8());
  const uint8_t rows = r.u8() % 5;
  const uint64_t cols = r.u16() % 1200;
  const shape shp = rows == 0 ? shape(cols) : shape(rows, cols);
  const std::vector<uint8_t> payload(r.rest(), r.rest() + r.remaining());
  const uint64_t n = shp.size();
  std::vector<uint8_t> g(n * dtype_bytes(gt)), out(n * 4, 0x5A);
  (void)detail::dispatch_dtype(gt, [&](auto tc) {
    for (uint64_t i = 0; i < n; ++i) detail::store<decltype(tc)::value>(g.data(), i, float(int(i % 19) - 9) * 0.25F);
    return status::success;
  });

  std::vector<uint8_t> hg = g, hout = out;
  const status hs = host::ef21_decode(expected, bytes_of(payload), payload.size(), tensor_view{hg.data(), gt, shp},
                                      tensor_view{hout.data(), dtype::f32, shp});

  device_context& ctx = device_context::get();
  const size_t ws_size = size_t(detail::workspace_request(
      std::max(detail::topk_decode_workspace(n, false), uint64_t(detail::workspace_status_bytes))));
  device_bytes dp(payload.size(), &payload), dg(g.size(), &g), dout(out.size(), &out), ws(ws_size);
  status ds = cuda::ef21_decode(expected, dp.get(), payload.size(), tensor_view{n ? dg.get() : nullptr, gt, shp},
                                tensor_view{n ? dout.get() : nullptr, dtype::f32, shp}, ws.get(), ws_size, ctx.stream);
  ds = ctx.finish(ds, ws.get());
  const std::vector<uint8_t> dgv = dg.read(g.size()), doutv = dout.read(out.size());

  PCFUZZ_CHECK(hs == ds, "ef21_decode (expecting %s): host %s, device %s", to_string(expected), to_string(hs),
               to_string(ds));
  if (!ok(hs)) {
    PCFUZZ_CHECK(hg == g && hout == out, "the host changed g or out on %s", to_string(hs));
    PCFUZZ_CHECK(dgv == g && doutv == out, "the device changed g or out on %s", to_string(ds));
    return 0;
  }
  PCFUZZ_CHECK(first_difference(hg, dgv) < 0, "g differs at byte %ld", first_difference(hg, dgv));
  PCFUZZ_CHECK(first_difference(hout, doutv) < 0, "out differs at byte %ld", first_difference(hout, doutv));
  return 0;
}

}  // namespace pcfuzz
