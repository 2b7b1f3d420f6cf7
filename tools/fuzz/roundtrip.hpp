// Harness (b): fuzzer-chosen codec, spec, shape, dtype, seed and data -> encode -> decode.
// Generic properties (every codec): encode succeeds and writes exactly encoded_bytes() (or
// at most, for codecs where that is a bound) and nothing past it; the same call gives the
// same bytes; one byte less of capacity gives buffer_too_small; decoding into fp16/bf16 is
// the fp32 decode rounded once; decode_accumulate into zeros adds it. Codec-specific bounds
// live in roundtrip_cases.hpp, one table line per codec.
//
// Input layout: case | spec bytes (per case) | shape | dtype | seed (8) | data mode | data.
// A seed with its top bit set keys stochastic rounding by sample (rng=sample) where it applies.
#pragma once

#include "roundtrip_cases.hpp"

namespace pcfuzz {

inline pipecodec::shape fuzz_shape(reader& r) {
  const uint8_t kind = r.u8();
  if (kind & 1) return pipecodec::shape(1 + r.u8() % 8, r.u16() % 600);
  return pipecodec::shape(r.u16() % 3000);
}

// Input bytes: the fuzzer's bytes taken raw (any bit pattern: NaN, Inf, subnormals) or as
// int8 values times a power of two (ordinary ranges, where the bounds are tight).
inline std::vector<uint8_t> fuzz_input(reader& r, pipecodec::dtype t, uint64_t n) {
  using namespace pipecodec;
  const uint8_t mode = r.u8();
  const int exp2 = int(r.u8() % 61) - 30;
  const uint8_t* src = r.rest();
  const size_t avail = r.remaining();
  std::vector<uint8_t> in(n * dtype_bytes(t), 0);
  if (avail == 0) return in;
  if (mode % 2 == 0) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = src[i % avail];
  } else {
    const float unit = exp2 >= 0 ? float(uint64_t(1) << exp2) : 1.0F / float(uint64_t(1) << -exp2);
    (void)detail::dispatch_dtype(t, [&](auto tc) {
      for (uint64_t i = 0; i < n; ++i) detail::store<decltype(tc)::value>(in.data(), i, float(int8_t(src[i % avail])) * unit);
      return status::success;
    });
  }
  return in;
}

// When the seed's top bit is set, keys the spec's draws by sample (rng=sample) where its
// groups or positions stay inside rows, and returns one id per row (from the seed).
inline std::vector<uint64_t> key_by_sample(pipecodec::spec& s, pipecodec::shape shp, uint64_t seed) {
  using namespace pipecodec;
  std::vector<uint64_t> ids;
  if ((seed >> 63) == 0) return ids;
  const bool quant_rows = s.codec == codec_id::quant && s.quant.round == rounding::stochastic &&
                          s.quant.group == group_kind::row;
  const bool float_rows = is_float_codec(s.codec) && s.flt.round == rounding::stochastic &&
                          (s.codec == codec_id::mx || s.flt.group == group_kind::row);
  const bool randk_rows = s.codec == codec_id::randk && s.topk.scope == topk_scope::row &&
                          s.topk.values != value_kind::quant && !s.topk.shared_mask;
  if (quant_rows) s.quant.rng = rng_key::sample;
  if (float_rows) s.flt.rng = rng_key::sample;
  if (randk_rows) s.topk.rng = rng_key::sample;
  if (quant_rows || float_rows || randk_rows)
    for (uint64_t row = 0; row < shp.rows; ++row) ids.push_back(detail::sample_key(seed, row));
  return ids;
}

inline int fuzz_roundtrip(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  reader r(data, size);
  const rt_case& c = rt_cases[r.u8() % (sizeof(rt_cases) / sizeof(rt_cases[0]))];
  spec s;
  c.make_spec(r, s);
  const shape shp = fuzz_shape(r);
  const dtype in_t = dtype_from(r.u8());
  const uint64_t seed = r.u64();
  // rng=sample where the groups stay inside rows, when the seed's top bit is set: every
  // property below holds for draws keyed by sample too.
  const std::vector<uint64_t> ids = key_by_sample(s, shp, seed);
  const randomness rnd(seed, ids.empty() ? nullptr : ids.data());
  const uint64_t n = shp.size();
  const std::vector<uint8_t> in = fuzz_input(r, in_t, n);
  const const_tensor_view view{in.data(), in_t, shp};

  const size_t cap = encoded_bytes(s, shp);
  PCFUZZ_CHECK(cap >= header_bytes, "%s: encoded_bytes %zu", c.name, cap);
  std::vector<uint8_t> ws(workspace_bytes(s, shp));
  std::vector<uint8_t> buf(cap + 64, 0xA5);
  size_t written = 0;
  status st = host::encode(s, view, buf.data(), cap, ws.data(), ws.size(), rnd, &written);
  PCFUZZ_CHECK(ok(st), "%s: encode failed: %s", c.name, to_string(st));
  PCFUZZ_CHECK(c.exact_size ? written == cap : written <= cap, "%s: wrote %zu of %zu", c.name, written, cap);
  for (size_t i = cap; i < buf.size(); ++i) PCFUZZ_CHECK(buf[i] == 0xA5, "%s: wrote past capacity", c.name);
  const std::vector<uint8_t> payload(buf.begin(), buf.begin() + long(written));

  std::vector<uint8_t> again(cap, 0);
  size_t written2 = 0;
  st = host::encode(s, view, again.data(), cap, ws.data(), ws.size(), rnd, &written2);
  again.resize(written2);
  PCFUZZ_CHECK(ok(st) && again == payload, "%s: encode is not deterministic", c.name);
  if (c.exact_size) {
    std::vector<uint8_t> small(cap - 1, 0x5A), small0 = small;
    st = host::encode(s, view, small.data(), small.size(), ws.data(), ws.size(), rnd, nullptr);
    PCFUZZ_CHECK(st == status::buffer_too_small && small == small0, "%s: short buffer gave %s", c.name, to_string(st));
  }

  std::vector<float> xhat(n);
  st = host::decode(payload.data(), payload.size(), tensor_view{xhat.data(), dtype::f32, shp}, ws.data(), ws.size());
  PCFUZZ_CHECK(ok(st), "%s: decode failed: %s", c.name, to_string(st));
  for (dtype t : {dtype::f16, dtype::bf16}) {
    std::vector<uint8_t> out(n * 2), want(n * 2);
    st = host::decode(payload.data(), payload.size(), tensor_view{out.data(), t, shp}, ws.data(), ws.size());
    PCFUZZ_CHECK(ok(st), "%s: decode to %s failed", c.name, to_string(t));
    // NaNs only need to stay NaN: a plain payload whose wire dtype is the output dtype is
    // copied bit for bit (payload and signalling bit kept), a conversion quiets them.
    for (uint64_t i = 0; i < n; ++i) {
      const float got = t == dtype::f16 ? detail::load<dtype::f16>(out.data(), i) : detail::load<dtype::bf16>(out.data(), i);
      if (xhat[i] != xhat[i]) {
        PCFUZZ_CHECK(got != got, "%s: NaN element %llu decodes to a number in %s", c.name, (unsigned long long)i, to_string(t));
        continue;
      }
      if (t == dtype::f16) detail::store<dtype::f16>(want.data(), i, xhat[i]);
      else detail::store<dtype::bf16>(want.data(), i, xhat[i]);
      PCFUZZ_CHECK(std::memcmp(&out[2 * i], &want[2 * i], 2) == 0, "%s: element %llu of the %s decode is not the fp32 decode rounded once",
                   c.name, (unsigned long long)i, to_string(t));
    }
  }
  std::vector<float> acc(n, 0.0F);
  st = host::decode_accumulate(payload.data(), payload.size(), tensor_view{acc.data(), dtype::f32, shp}, ws.data(), ws.size());
  PCFUZZ_CHECK(ok(st), "%s: decode_accumulate failed", c.name);
  for (uint64_t i = 0; i < n; ++i) {
    const float want = detail::add_rn(0.0F, xhat[i]);
    PCFUZZ_CHECK(std::memcmp(&acc[i], &want, 4) == 0, "%s: accumulate element %llu", c.name, (unsigned long long)i);
  }
  c.check(rt_run{s, shp, in_t, in, payload, xhat, seed});
  return 0;
}

}  // namespace pcfuzz
