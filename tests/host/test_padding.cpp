// Padding is part of the format: every padding byte (section tails, the sample-id section's
// tail) and every padded lane of a quantized chunk must be zero, and a decoder rejects
// anything else with corrupt_payload before writing output (docs/ERRORS.md). Padding
// positions are computed here from the layout's element counts, not from the checks.
#include <doctest/doctest.h>

#include <algorithm>

#include "../common/hostile.hpp"
#include "../common/print.hpp"
#include "../common/topk_check.hpp"

using namespace pipecodec;

namespace {

// Decodes plain and accumulating into sentinel-filled f32 outputs; returns false (after
// failing a check) unless both give corrupt_payload and leave the output untouched.
bool expect_corrupt(const std::vector<uint8_t>& p, shape shp) {
  bool good = true;
  for (bool acc : {false, true}) {
    std::vector<float> out(shp.size(), 4.5F);
    const tensor_view v{out.data(), dtype::f32, shp};
    const status got = acc ? host::decode_accumulate(p.data(), p.size(), v) : host::decode(p.data(), p.size(), v);
    const bool untouched = std::all_of(out.begin(), out.end(), [](float f) { return f == 4.5F; });
    if (got != status::corrupt_payload || !untouched) {
      FAIL_CHECK("got " << got << std::string(untouched ? "" : ", output written"));
      good = false;
    }
  }
  return good;
}

void expect_decodes(const std::vector<uint8_t>& p, shape shp) {
  std::vector<float> out(shp.size());
  REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{out.data(), dtype::f32, shp})));
}

struct span {
  uint64_t begin, end;  // byte offsets in the payload
};

// Sets every byte of every span (one at a time, two values each) and expects rejection.
// Returns how many bytes were tried.
uint64_t poke_bytes(const std::vector<uint8_t>& good, shape shp, const std::vector<span>& spans) {
  uint64_t tried = 0;
  for (const span& s : spans) {
    for (uint64_t b = s.begin; b < s.end; ++b) {
      REQUIRE(good[b] == 0);
      for (uint8_t v : {uint8_t(0x01), uint8_t(0x80)}) {
        auto bad = good;
        bad[b] = v;
        if (!expect_corrupt(bad, shp)) {
          MESSAGE("padding byte " << b);
          return tried;
        }
      }
      ++tried;
    }
  }
  return tried;
}

// The sample-id section's tail (rows odd: 8 bytes), when the flag is set.
span ids_padding(const header& h) {
  if ((h.flags & flag_sample_ids) == 0) return {0, 0};
  const uint64_t start = h.total_bytes - ids_section_bytes(h);
  return {start + 8 * h.shp.rows, h.total_bytes};
}

// Padding of a quant layout whose offsets are relative to `base` in the payload.
std::vector<span> quant_spans(const detail::quant_layout& L, uint64_t base) {
  const uint64_t params = L.groups * L.scale_bytes * (L.has_offset ? 2u : 1u);
  return {{base + L.params_offset + params, base + L.codes_offset},
          {base + L.codes_end(), base + L.outliers_offset},
          {base + L.outliers_end(), base + L.total}};
}

// Sets each padded-lane bit of each group's last chunk, one at a time.
uint64_t poke_lanes(const std::vector<uint8_t>& good, shape shp, const detail::quant_layout& L, uint64_t base) {
  uint64_t tried = 0;
  for (uint64_t g = 0; g < L.groups; ++g) {
    const uint64_t size = std::min(L.group_len, L.n - g * L.group_len);
    const uint64_t chunk = g * L.chunks_per_group + (size - 1) / 32;
    for (uint32_t j = 0; j < L.bits; ++j) {
      const uint64_t word = base + L.codes_offset + (chunk * L.bits + j) * 4;
      for (uint64_t lane = size - (size - 1) / 32 * 32; lane < 32; ++lane) {
        auto bad = good;
        bad[word + lane / 8] ^= uint8_t(1u << (lane % 8));
        if (!expect_corrupt(bad, shp)) {
          MESSAGE("group " << g << " plane " << j << " lane " << lane);
          return tried;
        }
        ++tried;
      }
    }
  }
  return tried;
}

// Sets each bit of the unused codes of an fp8/mx payload's last unit, one at a time.
uint64_t poke_unused_codes(const std::vector<uint8_t>& good, shape shp, const detail::float_layout& L) {
  uint64_t tried = 0;
  for (uint64_t bit = (L.n % 4) * L.width; L.n % 4 != 0 && bit < 4 * L.width; ++bit) {
    auto bad = good;
    bad[L.codes_offset + (L.units - 1) * L.unit_bytes() + bit / 8] ^= uint8_t(1u << (bit % 8));
    if (!expect_corrupt(bad, shp)) {
      MESSAGE("unused code bit " << bit);
      return tried;
    }
    ++tried;
  }
  return tried;
}

std::vector<uint8_t> with_ids(std::vector<uint8_t> p, uint64_t rows) {
  std::vector<uint64_t> ids(rows);
  for (uint64_t r = 0; r < rows; ++r) ids[r] = 1000 + r;
  const size_t base = p.size();
  p.resize(base + detail::align16(8 * rows));
  uint64_t total = 0;
  REQUIRE(ok(detail::append_sample_ids(p.data(), p.size(), ids.data(), &total)));
  REQUIRE(total == p.size());
  return p;
}

}  // namespace

TEST_CASE("quant, plain, fp8, mx and lowrank: non-zero section padding or padded lanes are corrupt_payload") {
  uint64_t bytes = 0, lanes = 0;
  for (const auto& c : golden::cases()) {
    CAPTURE_TEXT(c.name);
    for (bool ids : {false, true}) {
      CAPTURE(ids);
      auto good = golden::encode(c);
      REQUIRE(!good.empty());
      if (ids) good = with_ids(good, c.shp.rows);
      expect_decodes(good, c.shp);
      header h;
      REQUIRE(ok(read_header(good.data(), good.size(), h)));
      std::vector<span> spans{ids_padding(h)};
      if (h.codec == codec_id::quant) {
        detail::quant_payload qp;
        REQUIRE(ok(detail::parse_quant_payload(good.data(), good.size(), qp)));
        for (const span& s : quant_spans(qp.layout, 0)) spans.push_back(s);
        if (!ids) lanes += poke_lanes(good, c.shp, qp.layout, 0);
      } else if (is_float_codec(h.codec)) {
        detail::float_payload fp;
        REQUIRE(ok(detail::parse_float_payload(good.data(), good.size(), fp)));
        const detail::float_layout& L = fp.layout;
        spans.push_back({L.scales_offset + L.groups * L.scale_bytes, L.codes_offset});
        spans.push_back({L.codes_offset + L.units * L.unit_bytes(), L.total});
        if (!ids) lanes += poke_unused_codes(good, c.shp, L);
      } else if (h.codec == codec_id::lowrank) {
        detail::lowrank_payload lp;
        REQUIRE(ok(detail::parse_lowrank_payload(good.data(), good.size(), lp)));
        spans.push_back({lp.layout.p_end(), lp.layout.q_offset});
        spans.push_back({lp.layout.q_end(), lp.layout.total});
      } else {
        detail::plain_payload pl;
        REQUIRE(ok(detail::parse_plain_payload(good.data(), good.size(), pl)));
        spans.push_back({pl.layout.data_offset + pl.layout.n * dtype_bytes(pl.pp.wire), pl.layout.total});
      }
      bytes += poke_bytes(good, c.shp, spans);
    }
  }
  MESSAGE("padding bytes tried: " << bytes << ", padded-lane bits tried: " << lanes);
  CHECK(bytes > 0);
  CHECK(lanes > 0);
}

TEST_CASE("topk and randk: non-zero padding is corrupt_payload") {
  const shape shp(3, 1001);  // n = 3003: odd counts leave padding in every section
  const auto x = testdata::activations(shp.size(), 4);
  uint64_t bytes = 0, lanes = 0;
  for (const char* text :
       {"topk:k=21,scope=row,index=u32", "topk:k=21,scope=row,index=u16,values=fp16",
        "topk:k=21,scope=tensor,index=bitmap,values=bf16", "randk:k=21,scope=row",
        "topk:k=21,scope=row,index=u16,values=quant,bits=4", "randk:k=37,scope=tensor,values=quant,bits=3,group=row"}) {
    CAPTURE_TEXT(text);
    spec s;
    REQUIRE(ok(parse_spec(text, s)));
    for (bool ids : {false, true}) {
      CAPTURE(ids);
      auto good = testk::encode(s, x.data(), dtype::f32, shp, 3);
      if (ids) good = with_ids(good, shp.rows);
      expect_decodes(good, shp);
      detail::topk_payload tp;
      REQUIRE(ok(detail::parse_topk_payload(good.data(), good.size(), tp)));
      const auto& L = tp.layout;
      std::vector<span> spans{ids_padding(tp.hdr)};
      switch (tp.desc.index) {
        case index_layout::u16: spans.push_back({L.index_offset + 2 * L.kept, L.values_offset}); break;
        case index_layout::u32: spans.push_back({L.index_offset + 4 * L.kept, L.values_offset}); break;
        case index_layout::bitmap: spans.push_back({L.index_offset + (L.n + 7) / 8, L.values_offset}); break;
        default: break;
      }
      if (tp.desc.values == value_kind::quant) {
        const uint64_t base = L.values_offset - header_bytes;
        for (const span& sp : quant_spans(L.vq, base)) spans.push_back(sp);
        if (!ids) lanes += poke_lanes(good, shp, L.vq, base);
      } else {
        const uint64_t w = tp.desc.values == value_kind::f32 ? 4 : 2;
        spans.push_back({L.values_offset + w * L.kept, L.total});
      }
      bytes += poke_bytes(good, shp, spans);
      if (tp.desc.index == index_layout::bitmap && L.n % 8 != 0) {  // tail bits of the last byte
        for (uint64_t bit = L.n; bit % 8 != 0; ++bit) {
          auto bad = good;
          bad[L.index_offset + bit / 8] ^= uint8_t(1u << (bit % 8));
          CHECK(expect_corrupt(bad, shp));
        }
      }
    }
  }
  MESSAGE("padding bytes tried: " << bytes << ", padded-lane bits tried: " << lanes);
  CHECK(bytes > 0);
  CHECK(lanes > 0);
}
