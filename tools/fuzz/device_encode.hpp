// Device harness (b): fuzzer-chosen codec, spec, shape, dtype, seed and values, encoded by
// the host and by the CUDA backend on the emulated GPU: the same status and byte-identical
// payloads; each payload then decodes identically on both (device_decode.hpp). A TopK
// payload also serves as the mask of a shared-mask encode and decode on both.
//
// Input: as the round-trip harness (roundtrip.hpp), whose corpus seeds this one: case | spec
// bytes | shape | dtype | seed (8) | data mode | data; the cases are the round-trip table's
// and TopK/RandK. Seed bits 8-10 pick the decode's output dtype and accumulate.
#pragma once

#include "device_decode.hpp"
#include "roundtrip.hpp"

namespace pcfuzz {

inline void make_topk_spec(reader& r, pipecodec::spec& s) {
  using namespace pipecodec;
  const uint8_t m = r.u8(), k = r.u8();
  s.codec = m & 1 ? codec_id::randk : codec_id::topk;
  s.topk.scope = m & 2 ? topk_scope::row : topk_scope::tensor;
  s.topk.index = index_layout((m >> 2) & 3);
  s.topk.values = value_kind(1 + (m >> 4) % 4);
  s.topk.unbiased = s.codec == codec_id::randk && (m & 64) != 0;
  if (k & 128) s.topk.k = k & 127u;
  else s.topk.ratio = (k + 1) / 128.0;
  s.topk.seed = r.u16();
  if (s.topk.values == value_kind::quant) {
    spec q;
    make_quant_spec(r, q);
    s.topk.vquant = q.quant;
  }
}

// The CUDA encode of `in` (with `mask`: shared-mask values against it) into a device payload
// of encoded_bytes(); `payload` receives the bytes written.
inline pipecodec::status device_encode(const pipecodec::spec& s, const std::vector<uint8_t>& in, pipecodec::dtype t,
                                       pipecodec::shape shp, const std::vector<uint64_t>& ids, uint64_t seed,
                                       const std::vector<uint8_t>* mask, std::vector<uint8_t>& payload) {
  using namespace pipecodec;
  device_context& ctx = device_context::get();
  const size_t cap = encoded_bytes(s, shp), ws_size = workspace_bytes(s, shp);
  std::vector<uint8_t> id_bytes(ids.size() * 8);
  if (!ids.empty()) std::memcpy(id_bytes.data(), ids.data(), id_bytes.size());
  device_bytes din(in.size(), &in), dp(cap), dws(ws_size), dids(id_bytes.size(), &id_bytes),
      dmask(mask ? mask->size() : 0, mask);
  const const_tensor_view v{in.empty() ? nullptr : din.get(), t, shp};
  size_t written = 0;
  status st = status::success;
  if (mask != nullptr) {
    st = cuda::encode_shared(s, v, dmask.get(), mask->size(), dp.get(), cap, dws.get(), ws_size, seed, ctx.stream,
                             &written);
    st = ctx.finish(st, dws.get());  // the mask's device-side verdict
  } else {
    const randomness rnd(seed, ids.empty() ? nullptr : static_cast<const uint64_t*>(dids.get()));
    st = cuda::encode(s, v, dp.get(), cap, dws.get(), ws_size, rnd, ctx.stream, &written);
    ctx.sync();
  }
  payload = ok(st) ? dp.read(written) : std::vector<uint8_t>();
  return st;
}

inline pipecodec::status host_encode(const pipecodec::spec& s, const std::vector<uint8_t>& in, pipecodec::dtype t,
                                     pipecodec::shape shp, const std::vector<uint64_t>& ids, uint64_t seed,
                                     const std::vector<uint8_t>* mask, std::vector<uint8_t>& payload) {
  using namespace pipecodec;
  payload.assign(encoded_bytes(s, shp), 0);
  std::vector<uint8_t> ws(workspace_bytes(s, shp));
  const const_tensor_view v{in.empty() ? nullptr : in.data(), t, shp};
  size_t written = 0;
  const status st =
      mask ? host::encode_shared(s, v, mask->data(), mask->size(), payload.data(), payload.size(), ws.data(), ws.size(),
                                 seed, &written)
           : host::encode(s, v, payload.data(), payload.size(), ws.data(), ws.size(),
                          randomness(seed, ids.empty() ? nullptr : ids.data()), &written);
  payload.resize(ok(st) ? written : 0);
  return st;
}

// Both backends encode (with `mask`: shared-mask values): same status and bytes; an accepted
// payload then decodes alike. Returns the payload (empty when refused).
inline std::vector<uint8_t> check_encode_matches(const pipecodec::spec& s, const std::vector<uint8_t>& in,
                                                 pipecodec::dtype t, pipecodec::shape shp,
                                                 const std::vector<uint64_t>& ids, uint64_t seed,
                                                 const std::vector<uint8_t>* mask) {
  using namespace pipecodec;
  std::vector<uint8_t> want, got;
  const status hs = host_encode(s, in, t, shp, ids, seed, mask, want);
  const status ds = device_encode(s, in, t, shp, ids, seed, mask, got);
  PCFUZZ_CHECK(hs == ds, "%s encode: host %s, device %s", to_string(s).c_str(), to_string(hs), to_string(ds));
  if (!ok(hs)) return want;
  const long d = first_difference(want, got);
  PCFUZZ_CHECK(d < 0, "%s encode: payloads differ at byte %ld (host %zu bytes, device %zu)", to_string(s).c_str(), d,
               want.size(), got.size());
  device_decode_case c;
  c.payload = want;
  c.codec = s.codec;
  c.shared = mask != nullptr;
  if (mask) c.mask = *mask;
  c.type = dtype_from(uint8_t(seed >> 8));
  c.accumulate = ((seed >> 10) & 1) != 0;
  c.shp = shp;
  const status dec = check_decode_matches(c);
  PCFUZZ_CHECK(ok(dec), "%s: its own payload decodes to %s", to_string(s).c_str(), to_string(dec));
  return want;
}

int fuzz_device_encode(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  constexpr size_t rt_count = sizeof(rt_cases) / sizeof(rt_cases[0]);
  reader r(data, size);
  const size_t ci = r.u8() % (rt_count + 1);
  spec s;
  if (ci < rt_count) rt_cases[ci].make_spec(r, s);
  else make_topk_spec(r, s);
  const shape shp = fuzz_shape(r);
  const dtype t = dtype_from(r.u8());
  const uint64_t seed = r.u64();
  const std::vector<uint64_t> ids = key_by_sample(s, shp, seed);
  const std::vector<uint8_t> in = fuzz_input(r, t, shp.size());
  const std::vector<uint8_t> payload = check_encode_matches(s, in, t, shp, ids, seed, nullptr);
  if (s.codec == codec_id::topk && !payload.empty()) {
    spec values = s;
    values.topk.shared_mask = true;
    (void)check_encode_matches(values, in, t, shp, {}, seed, &payload);
  }
  return 0;
}

}  // namespace pcfuzz
