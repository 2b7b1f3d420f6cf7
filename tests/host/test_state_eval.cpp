// The state-eval driver behind `pipecodec eval --state`: per-step bytes and errors, state
// equality, and its output format.
#include <cstdio>
#include <string>

#include "../../tools/state_eval.hpp"
#include "../common/state_check.hpp"

using namespace pipecodec;
using namespace tstate;

TEST_CASE("state_eval: EF, EF21 and AQ-SGD over a sequence of steps") {
  const shape shp(6, 96);
  std::vector<step_tensor> data;
  for (int i = 0; i < 8; ++i) data.push_back(make_step(shp.size(), i % 2 ? 5 : 9, dtype::bf16));
  std::vector<const_tensor_view> steps;
  for (const auto& d : data) steps.push_back(const_tensor_view{d.bytes.data(), dtype::bf16, shp});
  for (auto scheme : {tools::state_scheme::ef, tools::state_scheme::ef21, tools::state_scheme::aqsgd}) {
    CAPTURE(int(scheme));
    tools::state_eval_options o;
    o.scheme = scheme;
    o.codec = parse("quant:bits=4,group=row");
    o.state_type = dtype::f16;
    o.warmup = parse("quant:bits=8,group=row");
    // AQ-SGD: rows are samples 0..5 in steps 0, 2, ... and 10..15 otherwise; the
    // inputs alternate between two tensors too, so each sample always sees one activation.
    std::vector<uint64_t> even = {0, 1, 2, 3, 4, 5}, odd = {10, 11, 12, 13, 14, 15};
    std::vector<const uint64_t*> ids;
    for (int i = 0; i < 8; ++i) ids.push_back(i % 2 ? odd.data() : even.data());
    tools::state_eval_result res;
    REQUIRE(ok(tools::state_eval(o, steps, ids, res)));
    REQUIRE(res.steps.size() == 8);
    CHECK(res.state_equal);
    for (size_t i = 0; i < 8; ++i) {
      CHECK(res.steps[i].step == i + 1);
      CHECK(res.steps[i].rel_l2_err >= 0);
    }
    if (scheme == tools::state_scheme::aqsgd) {
      // 8-bit warm-up, then 4-bit deltas: with fixed activations per sample the error collapses.
      CHECK(res.steps[0].bytes > res.steps[2].bytes);
      CHECK(res.steps[0].rel_l2_err > 1e-3);
      CHECK(res.steps[7].rel_l2_err < res.steps[0].rel_l2_err / 10);
    } else {
      CHECK(res.steps[0].bytes == encoded_bytes(o.codec, shp));
      CHECK(res.steps[0].rel_l2_err > 0.01);
    }
  }
}

TEST_CASE("state_eval: errors and output format") {
  const auto a = make_step(64, 1, dtype::f32);
  tools::state_eval_options o;
  o.codec = parse("quant:bits=4");
  tools::state_eval_result res;
  std::vector<const_tensor_view> steps = {const_tensor_view{a.bytes.data(), dtype::f32, shape(2, 32)},
                                          const_tensor_view{a.bytes.data(), dtype::f32, shape(4, 16)}};
  CHECK(tools::state_eval(o, steps, {}, res) == status::shape_mismatch);
  CHECK(tools::state_eval(o, {}, {}, res) == status::invalid_argument);
  o.scheme = tools::state_scheme::aqsgd;
  CHECK(tools::state_eval(o, steps, {}, res) == status::invalid_argument);  // no ids

  res.steps = {{1, 128, 0.5}, {2, 96, 0.25}};
  res.state_equal = true;
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  tools::print_state_eval(f, res);
  std::rewind(f);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  CHECK(std::string(buf, n) == "step: 1 bytes: 128 rel_l2_err: 0.5\nstep: 2 bytes: 96 rel_l2_err: 0.25\nstate_equal: yes\n");
}
