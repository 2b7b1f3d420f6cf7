// quant's Hadamard rotation on the host: the rotated values against a binary64 reference of
// the transform, the quantizer's bound on them, the inverse, the documented element bound in
// the original domain, unbiasedness, non-finite inputs, spec text and hostile bytes.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../common/data.hpp"
#include "../common/print.hpp"
#include "../common/quant_check.hpp"
#include "../common/spec_text.hpp"
#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;

namespace {

constexpr size_t rotation_byte = 40 + 5;  // header params start at 40 (docs/FORMAT.md)

// Sign of column c as the format defines it (bit c mod 128 of Philox block c / 128, stream 3).
bool negated(uint64_t seed, uint64_t c) {
  const detail::philox_out r = detail::random_block(seed, 3, c >> 7);
  return (r.v[(c >> 5) & 3u] >> (c & 31u)) & 1u;
}

// H v in binary64 by its definition: H[i][j] = (-1)^popcount(i & j).
std::vector<double> hadamard(const std::vector<double>& v) {
  const size_t n = v.size();
  std::vector<double> out(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) out[i] += (__builtin_popcountll(i & j) & 1) ? -v[j] : v[j];
  return out;
}

struct block_ref {
  uint64_t begin, c0;
};

// Every element's rotated value in binary64 (tails as they are), and the worst float rounding
// of the encoder's transform for each block: log2(B) additions of partial sums.
void reference_forward(const std::vector<float>& x, shape shp, uint32_t log2, uint64_t seed, std::vector<double>& y,
                       std::vector<double>& slop) {
  const uint64_t B = uint64_t(1) << log2, per_row = shp.cols / B;
  const double fwd = std::ldexp(1.0, -int(log2 / 2));
  y.assign(x.begin(), x.end());
  slop.assign(x.size(), 0.0);
  for (uint64_t r = 0; r < shp.rows; ++r)
    for (uint64_t b = 0; b < per_row; ++b) {
      const uint64_t begin = r * shp.cols + b * B;
      std::vector<double> v(B);
      double mass = 0;
      for (uint64_t k = 0; k < B; ++k) {
        v[k] = negated(seed, b * B + k) ? -double(x[begin + k]) : double(x[begin + k]);
        mass += std::fabs(v[k]);
      }
      const std::vector<double> h = hadamard(v);
      for (uint64_t k = 0; k < B; ++k) {
        y[begin + k] = h[k] * fwd;
        slop[begin + k] = log2 * 0x1p-24 * mass * fwd;
      }
    }
}

// x = D 2^-(k-a) H y' in binary64 for the blocks of a decoded rotated-domain tensor.
std::vector<double> reference_inverse(const std::vector<float>& yq, shape shp, uint32_t log2, uint64_t seed,
                                      std::vector<double>& slop) {
  const uint64_t B = uint64_t(1) << log2, per_row = shp.cols / B;
  const double inv = std::ldexp(1.0, -int(log2 - log2 / 2));
  std::vector<double> x(yq.begin(), yq.end());
  slop.assign(yq.size(), 0.0);
  for (uint64_t r = 0; r < shp.rows; ++r)
    for (uint64_t b = 0; b < per_row; ++b) {
      const uint64_t begin = r * shp.cols + b * B;
      std::vector<double> v(yq.begin() + long(begin), yq.begin() + long(begin + B));
      double mass = 0;
      for (double e : v) mass += std::fabs(e);
      const std::vector<double> h = hadamard(v);
      for (uint64_t k = 0; k < B; ++k) {
        x[begin + k] = (negated(seed, b * B + k) ? -h[k] : h[k]) * inv;
        slop[begin + k] = (log2 + 1) * 0x1p-24 * mass * inv;
      }
    }
  return x;
}

// The payload with its rotation bytes cleared: a valid unrotated payload whose decode is the
// rotated-domain values.
std::vector<float> rotated_domain(std::vector<uint8_t> payload, shape shp) {
  payload[rotation_byte] = 0;
  payload[rotation_byte + 1] = 0;
  return testq::decode_f32(payload, shp);
}

// Per-element quantization bound on the rotated values (nearest), from the stored scales.
std::vector<double> rotated_bounds(const std::vector<uint8_t>& payload, const std::vector<float>& yq) {
  detail::quant_payload qp;
  REQUIRE(ok(detail::parse_quant_payload(payload.data(), payload.size(), qp)));
  std::vector<double> bound(yq.size());
  for (uint64_t g = 0; g < qp.layout.groups; ++g) {
    float s, o;
    detail::load_group(qp, g, s, o);
    const uint64_t b = qp.layout.group_begin(g);
    for (uint64_t i = b; i < b + qp.layout.group_size(g); ++i)
      bound[i] = qp.q.round == rounding::nearest ? detail::nearest_error_bound(s, o, yq[i]) : double(s);
  }
  return bound;
}

struct rot_case {
  const char* spec;
  shape shp;
};

const rot_case cases[] = {
    {"quant:bits=2,group=128,rotate=hadamard", shape(4, 512)},
    {"quant:bits=3,group=64,scale=absmax,rotate=hadamard,rotate_block=32", shape(3, 200)},   // tails of 8
    {"quant:bits=4,group=row,rotate=hadamard,rotate_block=64,scale_dtype=fp16", shape(5, 300)},
    {"quant:bits=8,group=tensor,rotate=hadamard,rotate_block=256", shape(2, 1024)},
    {"quant:bits=2,group=96,round=stochastic,rotate=hadamard,rotate_block=64", shape(6, 192)},
    {"quant:bits=3,group=32,rotate=hadamard,rotate_block=128", shape(1000)},                 // 1-D: 7 blocks, tail 104
    {"quant:bits=4,group=128,rotate=hadamard,rotate_block=128", shape(7, 100)},              // all tail
    {"quant:bits=1,group=32,scale=absmax,rotate=hadamard,rotate_block=4096", shape(1, 4096)},
};

}  // namespace

TEST_CASE("rotation: rotated values, quantizer bound, inverse and the element bound") {
  for (const rot_case& c : cases) {
    const spec s = testspec::parse(c.spec);
    const uint32_t log2 = s.quant.rotate_log2;
    const uint64_t seed = 0x5EED0000u + log2;
    // Outlier channels: a few columns 20-100x the rest, as transformer activations have.
    std::vector<float> x = testdata::uniform(c.shp.size(), log2 * 31 + c.shp.cols);
    for (uint64_t i = 0; i < x.size(); ++i)
      if ((i % c.shp.cols) % 41 == 3) x[i] *= float(20 + (i % c.shp.cols) % 81);
    CAPTURE(c.spec);
    CAPTURE(c.shp);
    const std::vector<uint8_t> payload = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, c.shp, seed);
    CHECK(payload[rotation_byte] == 1);
    CHECK(payload[rotation_byte + 1] == log2);
    uint64_t stored_seed = 0;
    memcpy(&stored_seed, payload.data() + 40 + 16, 8);
    CHECK(stored_seed == seed);

    std::vector<double> y, fwd_slop;
    reference_forward(x, c.shp, log2, seed, y, fwd_slop);
    const std::vector<float> yq = rotated_domain(payload, c.shp);
    const std::vector<double> qbound = rotated_bounds(payload, yq);
    std::vector<double> inv_slop;
    const std::vector<double> back = reference_inverse(yq, c.shp, log2, seed, inv_slop);
    const std::vector<float> xq = testq::decode_f32(payload, c.shp);

    const uint64_t B = uint64_t(1) << log2, per_row = c.shp.cols / B;
    int failures = 0;
    for (uint64_t i = 0; i < x.size() && failures < 5; ++i) {
      const double e_y = std::fabs(y[i] - yq[i]);
      if (!(e_y <= qbound[i] + fwd_slop[i])) {
        FAIL_CHECK("rotated value " << i << ": " << yq[i] << " vs " << y[i] << " bound " << qbound[i]);
        ++failures;
      }
      if (!(std::fabs(back[i] - xq[i]) <= inv_slop[i] + 1e-300)) {
        FAIL_CHECK("inverse " << i << ": " << xq[i] << " vs " << back[i] << " slop " << inv_slop[i]);
        ++failures;
      }
    }
    // The documented bound: |x - x_hat| <= 2^-(k-a) * sum over the block of the rotated
    // values' bounds (plus the transforms' float roundings); tails keep the quantizer's.
    const double inv = std::ldexp(1.0, -int(log2 - log2 / 2));
    for (uint64_t r = 0; r < c.shp.rows; ++r) {
      for (uint64_t b = 0; b < per_row; ++b) {
        const uint64_t begin = r * c.shp.cols + b * B;
        double sum = 0, slop = 0;
        for (uint64_t k = 0; k < B; ++k) {
          sum += qbound[begin + k] + fwd_slop[begin + k];
          slop = std::max(slop, inv_slop[begin + k]);
        }
        for (uint64_t k = 0; k < B; ++k) {
          const double err = std::fabs(double(x[begin + k]) - xq[begin + k]);
          if (!(err <= inv * sum + slop)) {
            FAIL_CHECK("element " << begin + k << ": err " << err << " bound " << inv * sum + slop);
            break;
          }
        }
      }
      for (uint64_t i = r * c.shp.cols + per_row * B; i < (r + 1) * c.shp.cols; ++i) {
        CHECK(float(y[i]) == x[i]);  // tails are not rotated
        if (!(std::fabs(double(x[i]) - xq[i]) <= qbound[i])) FAIL_CHECK("tail element " << i);
      }
    }
  }
}

TEST_CASE("rotation: decode into every dtype, accumulate, and input dtypes") {
  const spec s = testspec::parse("quant:bits=4,group=128,rotate=hadamard,rotate_block=64");
  const shape shp(3, 160);
  const std::vector<float> x = testdata::activations(shp.size(), 5);
  const std::vector<uint8_t> payload = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp, 11);
  const std::vector<float> d = testq::decode_f32(payload, shp);
  std::vector<float> acc(shp.size(), 0.25F);
  REQUIRE(ok(host::decode_accumulate(payload.data(), payload.size(), tensor_view{acc.data(), dtype::f32, shp})));
  for (uint64_t i = 0; i < acc.size(); ++i) REQUIRE(acc[i] == 0.25F + d[i]);
  std::vector<uint16_t> h(shp.size());
  REQUIRE(ok(host::decode(payload.data(), payload.size(), tensor_view{h.data(), dtype::bf16, shp})));
  for (uint64_t i = 0; i < h.size(); ++i) REQUIRE(h[i] == detail::f32_to_bf16(d[i]));
  // bf16 input rotates the values the input holds: the same payload as their fp32 copy, but
  // for the header's dtype byte.
  std::vector<float> xbf(shp.size());
  for (uint64_t i = 0; i < x.size(); ++i) xbf[i] = detail::bf16_to_f32(detail::f32_to_bf16(x[i]));
  std::vector<uint8_t> pb = testq::encode(s, testdata::as_bytes(x, dtype::bf16), dtype::bf16, shp, 11);
  const std::vector<uint8_t> pf = testq::encode(s, testdata::as_bytes(xbf, dtype::f32), dtype::f32, shp, 11);
  pb[8] = pf[8];
  CHECK(pb == pf);
}

TEST_CASE("rotation: stochastic rounding stays unbiased through the rotation") {
  const spec s = testspec::parse("quant:bits=2,group=64,round=stochastic,rotate=hadamard,rotate_block=64");
  const shape shp(2, 64);
  const std::vector<float> x = testdata::uniform(shp.size(), 3);
  std::vector<double> mean(shp.size(), 0.0);
  const int trials = 4000;
  double worst_step = 0;
  for (int t = 0; t < trials; ++t) {
    const std::vector<uint8_t> p = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp, 1000 + t);
    const std::vector<float> d = testq::decode_f32(p, shp);
    for (uint64_t i = 0; i < d.size(); ++i) mean[i] += d[i] / trials;
    detail::quant_payload qp;
    REQUIRE(ok(detail::parse_quant_payload(p.data(), p.size(), qp)));
    float sc, o;
    detail::load_group(qp, 0, sc, o);
    worst_step = std::max(worst_step, double(sc));
  }
  // Each decoded element is a +-1 combination of 64 independent roundings of variance below
  // step^2 / 4, times 2^-3: its standard deviation is below step / 2; the mean of 4000 trials
  // below step / 126. Six of those is a bound no correct encoder exceeds by chance.
  for (uint64_t i = 0; i < x.size(); ++i) CHECK(std::fabs(mean[i] - x[i]) < 6 * worst_step / 126);
}

TEST_CASE("rotation: a non-finite input spoils its own block only") {
  const spec s = testspec::parse("quant:bits=4,group=64,rotate=hadamard,rotate_block=64");
  const shape shp(2, 128);
  std::vector<float> x = testdata::uniform(shp.size(), 8);
  const std::vector<float> clean = testq::decode_f32(testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp, 2), shp);
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    x[70] = bad;  // row 0, block 1
    const std::vector<float> d = testq::decode_f32(testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp, 2), shp);
    for (uint64_t i = 0; i < d.size(); ++i) {
      CHECK(std::isfinite(d[i]));
      if (i < 64 || i >= 128) CHECK(d[i] == clean[i]);
    }
  }
}

TEST_CASE("rotation: rotation halves the error of 2- and 3-bit codes on outlier channels") {
  const shape shp(64, 1024);
  std::vector<float> x = testdata::uniform(shp.size(), 21);
  for (uint64_t i = 0; i < x.size(); ++i)
    if ((i % shp.cols) % 97 == 5) x[i] *= 60.0F;
  for (const char* bits : {"2", "3"}) {
    double err[2] = {0, 0};
    for (int rot = 0; rot < 2; ++rot) {
      const spec s = testspec::parse(std::string("quant:bits=") + bits + ",group=128" + (rot ? ",rotate=hadamard" : ""));
      const std::vector<float> d = testq::decode_f32(testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp, 4), shp);
      for (uint64_t i = 0; i < x.size(); ++i) err[rot] += (x[i] - d[i]) * double(x[i] - d[i]);
    }
    CAPTURE(bits);
    CHECK(err[1] < 0.5 * err[0]);
  }
}

TEST_CASE("rotation: spec text") {
  CHECK(to_string(testspec::parse("quant:bits=2,rotate=hadamard")) ==
        "quant:bits=2,group=128,scale=minmax,round=nearest,scale_dtype=fp32,rotate=hadamard,rotate_block=128");
  CHECK(to_string(testspec::parse("quant:rotate_block=32,bits=3,rotate=hadamard")).find("rotate_block=32") != std::string::npos);
  CHECK(to_string(testspec::parse("quant:bits=3,rotate=none")) == to_string(testspec::parse("quant:bits=3")));
  spec s;
  std::string err;
  CHECK(parse_spec("quant:bits=2,rotate_block=64", s, &err) == status::invalid_spec);
  CHECK(err.find("rotate_block") != std::string::npos);
  for (const char* bad : {"16", "100", "8192", "0", "x"}) {
    err.clear();
    CHECK(parse_spec(std::string("quant:rotate=hadamard,rotate_block=") + bad, s, &err) == status::invalid_spec);
    CHECK(err.find("rotate_block") != std::string::npos);
  }
  CHECK(parse_spec("quant:rotate=walsh", s, &err) == status::invalid_spec);
  CHECK(err.find("rotate") != std::string::npos);
  for (const char* other : {"topk:values=quant,rotate=hadamard", "randk:values=quant,rotate_block=64",
                            "fp8:rotate=hadamard", "mx:rotate=hadamard", "plain:rotate=hadamard"}) {
    err.clear();
    CHECK(parse_spec(other, s, &err) == status::invalid_spec);
    CHECK(err.find("'rotate") != std::string::npos);
  }
}

TEST_CASE("rotation: workspace, aliasing and hostile parameter bytes") {
  const spec s = testspec::parse("quant:bits=4,group=64,rotate=hadamard,rotate_block=64");
  const shape shp(2, 128);
  const std::vector<float> x = testdata::uniform(shp.size(), 9);
  std::vector<uint8_t> p(encoded_bytes(s, shp));
  const size_t need = workspace_bytes(s, shp);
  CHECK(need >= shp.size() * 4);
  CHECK(host::encode_workspace_bytes(s, shp) == need);
  CHECK(host::encode_workspace_bytes(testspec::parse("quant:bits=4,group=64"), shp) == 0);
  std::vector<uint8_t> ws(need);
  const const_tensor_view in{x.data(), dtype::f32, shp};
  CHECK(host::encode(s, in, p.data(), p.size()) == status::workspace_too_small);
  CHECK(host::encode(s, in, p.data(), p.size(), ws.data(), need - 1) == status::workspace_too_small);
  CHECK(host::encode(s, in, p.data(), p.size(), nullptr, need) == status::invalid_argument);
  std::vector<uint8_t> arena(p.size() + need);  // a workspace overlapping the payload or the input
  CHECK(host::encode(s, in, arena.data(), p.size(), arena.data() + 16, need) == status::aliasing);
  CHECK(host::encode(s, in, p.data(), p.size(), const_cast<float*>(x.data()) + 8, need) == status::aliasing);
  REQUIRE(ok(host::encode(s, in, p.data(), p.size(), ws.data(), need, 3)));
  // Every value of the three rotation bytes that an encoder cannot write is invalid_header,
  // and the output stays untouched.
  std::vector<float> out(shp.size(), 7.0F);
  for (int byte = 0; byte < 3; ++byte)
    for (int v = 0; v < 256; ++v) {
      std::vector<uint8_t> h = p;
      h[rotation_byte + byte] = uint8_t(v);
      const bool valid = byte == 0 ? (v == 0 || v == 1) && (v == 1) == (h[rotation_byte + 1] != 0)
                         : byte == 1 ? (v >= 5 && v <= 12)
                                     : v == 0;
      const status st = host::decode(h.data(), h.size(), tensor_view{out.data(), dtype::f32, shp});
      CAPTURE(byte);
      CAPTURE(v);
      if (valid) CHECK(ok(st));
      else {
        CHECK(st == status::invalid_header);
        for (float o : out) REQUIRE(o == 7.0F);
      }
      if (ok(st)) std::fill(out.begin(), out.end(), 7.0F);
    }
}

TEST_CASE("rotation: huge inputs saturate, decodes stay finite, codes reaching too far are corrupt") {
  const spec s = testspec::parse("quant:bits=4,group=64,rotate=hadamard,rotate_block=64");
  const shape shp(2, 100);  // blocks of 64 and tails of 36
  std::vector<float> x = testdata::uniform(shp.size(), 12);
  for (uint64_t i : {0u, 5u, 63u, 70u, 99u, 150u}) x[i] = (i % 2 ? -1 : 1) * 3.0e38F;
  const std::vector<uint8_t> p = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp, 5);
  const std::vector<float> d = testq::decode_f32(p, shp);
  for (float v : d) REQUIRE(std::isfinite(v));
  for (float v : rotated_domain(p, shp)) CHECK(std::fabs(v) <= 0x1p121F);  // 2 * 2^(126-6)
  CHECK(std::fabs(d[70]) > 1e35F);  // a huge tail value saturates at 2^120, it does not vanish

  // A storable scale whose highest code decodes beyond 2^(127-6): every decode would stay
  // finite only by luck, so the payload is corrupt; the output stays untouched.
  std::vector<uint8_t> bad = testq::encode(s, testdata::as_bytes(testdata::uniform(shp.size(), 13), dtype::f32), dtype::f32, shp, 5);
  const uint32_t scale = (127u + 118u) << 23;  // 2^118: code 15 decodes near 2^122
  memcpy(bad.data() + 64, &scale, 4);
  std::vector<float> out(shp.size(), 3.0F);
  CHECK(host::decode(bad.data(), bad.size(), tensor_view{out.data(), dtype::f32, shp}) == status::corrupt_payload);
  for (float o : out) REQUIRE(o == 3.0F);
}
