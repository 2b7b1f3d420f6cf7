// The quantizer, fp8 and mx on real and realistic data: Fashion-MNIST images and synthetic
// activation-like tensors, encoded with a grid of specs, as a table of size and error.
//   quant_table [--fashion-mnist DIR] [--images N] [--npy NAME=FILE.npy ...] [--lowrank-steps N] [SPEC ...]
// --npy adds a float32 2-D tensor as a dataset (e.g. pipeline_train --dump-activations).
// --lowrank-steps N: lowrank specs report the N-th of N warm-started encodes (default 1: cold).
// With SPECs, only those are run; otherwise a grid over bits, group, scaling, rounding and
// scale dtype. Rows print as they are computed; a summary per dataset closes the run.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../examples/common/fashion_mnist.hpp"
#include "cli/codec_ops.hpp"
#include "metrics.hpp"

namespace {

struct dataset {
  std::string name;
  cli::tensor t;  // fp32
  std::string origin = "synthetic";
};

cli::tensor make_tensor(pipecodec::shape shp, const std::vector<float>& v) {
  cli::tensor t;
  t.shp = shp;
  t.bytes.resize(v.size() * sizeof(float));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// Synthetic tensors shaped like a transformer's batch x hidden activations and gradients.
std::vector<dataset> synthetic() {
  const uint64_t rows = 1024, cols = 1024;
  std::mt19937_64 rng(2024);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::chi_squared_distribution<float> chi2(3.0F);
  std::uniform_real_distribution<float> unit(0.0F, 1.0F);
  std::vector<float> relu(rows * cols), heavy(rows * cols), grad(rows * cols), channels(rows * cols);
  for (float& x : relu) x = std::fmax(normal(rng), 0.0F);                       // ReLU(N(0,1))
  for (float& x : heavy) x = normal(rng) / std::sqrt(chi2(rng) / 3.0F);          // Student t, 3 dof
  for (uint64_t r = 0; r < rows; ++r) {                                          // per-row scales 1e-6..1e-3
    const float scale = std::pow(10.0F, -6.0F + 3.0F * unit(rng));
    for (uint64_t c = 0; c < cols; ++c) grad[r * cols + c] = scale * normal(rng);
  }
  // Outliers: a few channels ~50x larger, as seen in LLM activations.
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c : {7u, 300u, 811u}) heavy[r * cols + c] *= 50.0F;
  // Outlier channels as transformer activations have them: N(0,1) with 8 channels of every
  // row 20-100x larger (the same channels in every row).
  for (float& x : channels) x = normal(rng);
  for (uint64_t k = 0; k < 8; ++k)
    for (uint64_t r = 0; r < rows; ++r) channels[r * cols + (k * 131 + 17) % cols] *= 20.0F + 80.0F * float(k) / 7.0F;
  const pipecodec::shape shp(rows, cols);
  return {{"relu(gauss)", make_tensor(shp, relu)},
          {"t3+outliers", make_tensor(shp, heavy)},
          {"gauss+chan20-100x", make_tensor(shp, channels)},
          {"gradients", make_tensor(shp, grad)}};
}

std::vector<std::string> default_specs() {
  std::vector<std::string> s;
  for (int b = 1; b <= 8; ++b) s.push_back("quant:bits=" + std::to_string(b) + ",group=128,scale_dtype=fp16");
  for (int b = 2; b <= 4; ++b)
    s.push_back("quant:bits=" + std::to_string(b) + ",group=128,scale_dtype=fp16,rotate=hadamard");
  for (int b = 2; b <= 3; ++b)
    for (int k : {1, 2, 4})
      s.push_back("quant:bits=" + std::to_string(b) + ",group=128,scale_dtype=fp16,outliers=" + std::to_string(k));
  for (const char* extra : {"quant:bits=4,group=32,scale_dtype=fp16", "quant:bits=4,group=row,scale_dtype=fp16",
                            "quant:bits=4,group=128,scale_dtype=fp32", "quant:bits=4,group=128,scale=absmax,scale_dtype=fp16",
                            "quant:bits=8,group=128,scale=absmax,scale_dtype=fp16",
                            "quant:bits=2,group=128,round=stochastic,scale_dtype=fp16",
                            "quant:bits=4,group=128,round=stochastic,scale_dtype=fp16",
                            "fp8:format=e4m3,group=128,scale_dtype=fp16", "fp8:format=e5m2,group=128,scale_dtype=fp16",
                            "fp8:format=e4m3,group=row", "mx:format=fp8_e4m3", "mx:format=fp8_e5m2",
                            "mx:format=fp6_e3m2", "mx:format=fp6_e2m3", "mx:format=fp4_e2m1", "mx:format=int8"})
    s.push_back(extra);
  return s;
}

struct row {
  std::string spec;
  double bits, ratio;
  metrics::error_stats err;
};

// lowrank after `steps` warm-started encodes of the same tensor (subspace iteration: the state
// a boundary reaches on slowly changing activations); one cold encode when steps is 1.
std::vector<uint8_t> lowrank_warm(const pipecodec::spec& s, const cli::tensor& t, uint64_t steps) {
  std::vector<uint8_t> payload(pipecodec::encoded_bytes(s, t.shp)), ws(pipecodec::workspace_bytes(s, t.shp));
  std::vector<float> q(t.shp.cols * s.lowrank.rank, 0.0F);
  for (uint64_t k = 0; k < steps; ++k) {
    const pipecodec::status st = pipecodec::host::lowrank_encode(
        s, t.view(), {q.data(), pipecodec::dtype::f32, pipecodec::shape(t.shp.cols, s.lowrank.rank)}, payload.data(),
        payload.size(), ws.data(), ws.size(), /*seed=*/1);
    if (!pipecodec::ok(st)) throw cli::error(std::string("encode failed: ") + pipecodec::to_string(st));
  }
  return payload;
}

row measure(const dataset& d, const std::string& text, uint64_t lowrank_steps) {
  pipecodec::spec s;
  std::string why;
  if (!pipecodec::ok(pipecodec::parse_spec(text, s, &why))) throw cli::error("bad spec '" + text + "': " + why);
  const std::vector<uint8_t> payload = s.codec == pipecodec::codec_id::lowrank ? lowrank_warm(s, d.t, lowrank_steps)
                                                                               : cli::encode(s, d.t, /*seed=*/1);
  const cli::tensor back = cli::decode_as(payload, d.t.shp, pipecodec::dtype::f32);
  row r;
  r.spec = text;
  r.bits = 8.0 * double(payload.size()) / double(d.t.size());
  r.ratio = double(d.t.bytes.size()) / double(payload.size());
  r.err = metrics::compare(d.t.size(), [&](uint64_t i) { return d.t.at(i); }, [&](uint64_t i) { return back.at(i); });
  return r;
}

// Cheapest row whose relative L2 error is at most `limit`.
const row* cheapest(const std::vector<row>& rows, double limit) {
  const row* best = nullptr;
  for (const row& r : rows)
    if (r.err.rel_l2 <= limit && (!best || r.bits < best->bits)) best = &r;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string dir = fashion_mnist::default_dir();
  uint64_t images = 10000, lowrank_steps = 1;
  std::vector<std::string> specs;
  std::vector<std::pair<std::string, std::string>> extra;  // --npy NAME=FILE
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--fashion-mnist" && i + 1 < argc) dir = argv[++i];
      else if (a == "--images" && i + 1 < argc) images = cli::parse_uint("images", argv[++i]);
      else if (a == "--lowrank-steps" && i + 1 < argc) lowrank_steps = cli::parse_uint("lowrank-steps", argv[++i]);
      else if (a == "--npy" && i + 1 < argc) {
        const std::string v = argv[++i];
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) throw cli::error("--npy expects NAME=FILE.npy, got '" + v + "'");
        extra.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      } else if (a.rfind("--", 0) == 0) throw cli::error("unknown option '" + a + "'");
      else specs.push_back(a);
    }
    if (specs.empty()) specs = default_specs();

    std::vector<dataset> data;
    const fashion_mnist::images im = fashion_mnist::load_images(fashion_mnist::images_file(dir, false), images);
    data.push_back({"fashion-mnist", make_tensor(pipecodec::shape(im.count, im.rows * im.cols), im.pixels),
                    "t10k images in [0,1]"});
    for (dataset& d : synthetic()) data.push_back(std::move(d));
    for (const auto& [name, path] : extra) {
      cli::tensor t = cli::load_tensor(path, cli::args{});
      if (t.type != pipecodec::dtype::f32) throw cli::error("'" + path + "': quant_table reads float32 tensors");
      data.push_back({name, std::move(t), path});
    }

    std::printf("quant_table: %zu datasets x %zu specs; ratio is against fp32; errors over finite inputs\n",
                data.size(), specs.size());
    for (const dataset& d : data)
      std::printf("  %-17s %s, fp32 (%llu x %llu)\n", d.name.c_str(), d.origin.c_str(),
                  static_cast<unsigned long long>(d.t.shp.rows), static_cast<unsigned long long>(d.t.shp.cols));
    std::printf("\n%-17s | %-58s | %9s | %7s | %11s | %11s | %10s\n", "data", "spec", "bits/elem", "ratio",
                "max_abs_err", "rmse", "rel_l2_err");
    std::vector<std::vector<row>> results(data.size());
    for (size_t di = 0; di < data.size(); ++di) {
      for (const std::string& sp : specs) {
        const row r = measure(data[di], sp, lowrank_steps);
        std::printf("%-17s | %-58s | %9.3f | %7.2f | %11.4g | %11.4g | %10.4g\n", data[di].name.c_str(), sp.c_str(),
                    r.bits, r.ratio, r.err.max_abs, r.err.rmse, r.err.rel_l2);
        std::fflush(stdout);
        results[di].push_back(r);
      }
    }

    std::printf("\nSummary: cheapest spec within a relative L2 error budget\n");
    for (size_t di = 0; di < data.size(); ++di)
      for (double limit : {0.01, 0.1}) {
        const row* r = cheapest(results[di], limit);
        if (r)
          std::printf("  %-17s rel_l2 <= %-4g %-58s %.3f bits/elem, %.2fx smaller\n", data[di].name.c_str(), limit,
                      r->spec.c_str(), r->bits, r->ratio);
        else
          std::printf("  %-17s rel_l2 <= %-4g none of the specs\n", data[di].name.c_str(), limit);
      }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%zu rows in %.1f s\n", data.size() * specs.size(), secs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quant_table: %s\n", e.what());
    return 1;
  }
  return 0;
}
