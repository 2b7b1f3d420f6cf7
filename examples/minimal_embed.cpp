// The smallest complete use of a policy: parse it, build the sender and receiver of one
// boundary's forward direction, push a batch of activations through encode -> bytes -> decode.
#include <pipecodec/policy/endpoint.hpp>
#include <pipecodec/policy/policy_parse.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace pc = pipecodec;

int main() {
  pc::policy pol;
  std::string err;
  if (!pc::ok(pc::parse_policy("fwd=quant:bits=4; bwd=quant:bits=8; infer=plain", pol, &err))) {
    std::fprintf(stderr, "bad policy: %s\n", err.c_str());
    return 1;
  }
  const uint64_t rows = 32, cols = 1024;  // batch x features, known before any data is seen
  pc::host::endpoint_options opts;
  opts.max_shape = pc::shape(rows, cols);
  pc::host::sender_endpoint tx;    // lives on stage 0
  pc::host::receiver_endpoint rx;  // lives on stage 1
  pc::status st = tx.init(pol, 0, pc::direction::fwd, opts);
  if (pc::ok(st)) st = rx.init(pol, 0, pc::direction::fwd, opts);
  std::vector<float> act(rows * cols), out(rows * cols);
  for (size_t i = 0; i < act.size(); ++i) act[i] = std::sin(0.01f * float(i));
  std::vector<uint8_t> wire(tx.encoded_bytes());  // allocated once, reused every step
  size_t len = 0;
  pc::step_info step;  // step 0 of epoch 0, training; both sides see the same one
  if (pc::ok(st)) st = tx.encode({act.data(), pc::dtype::f32, opts.max_shape}, step, wire.data(), wire.size(), &len);
  // ... the len bytes would go over MPI / NCCL / a socket here ...
  if (pc::ok(st)) st = rx.decode(wire.data(), len, {out.data(), pc::dtype::f32, opts.max_shape}, step);
  if (!pc::ok(st)) {
    std::fprintf(stderr, "pipecodec: %s\n", pc::to_string(st));
    return 1;
  }
  double max_err = 0;
  for (size_t i = 0; i < act.size(); ++i) max_err = std::fmax(max_err, std::fabs(double(act[i]) - out[i]));
  const auto& c = tx.counters();
  std::printf("%s: %zu -> %zu bytes (%.2f bits/element), max error %.4f\n", pc::to_string(pol.all.fwd).c_str(),
              size_t(c.bytes_in), size_t(c.bytes_out), 8.0 * double(c.bytes_out) / double(c.elements), max_err);
  // 4-bit min-max groups of values in [-1, 1]: the error stays below half a step, 2/15/2.
  return max_err <= 1.0 / 15 + 1e-6 ? 0 : 1;
}
