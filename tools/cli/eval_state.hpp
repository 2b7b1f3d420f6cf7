// `eval --state ef|ef-sample|ef21|aqsgd`: the step files are successive tensors through one boundary;
// a sender and a receiver of the scheme run over them (tools/state_eval.hpp) and the CLI
// prints one line per step and whether both sides' states ended equal. Inputs are checked
// here first so that a bad file is named in the message, not reported as a bare status.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "../state_eval.hpp"
#include "codec_ops.hpp"
#include "describe.hpp"

namespace cli {

inline pipecodec::tools::state_scheme parse_state_option(const std::string& v) {
  using pipecodec::tools::state_scheme;
  if (v == "ef") return state_scheme::ef;
  if (v == "ef-sample") return state_scheme::ef_sample;
  if (v == "ef21") return state_scheme::ef21;
  if (v == "aqsgd") return state_scheme::aqsgd;
  throw error("option '--state': expected ef, ef-sample, ef21 or aqsgd, got '" + v + "'");
}


// Steps: .npy only. EF, EF21: one shape for all. AQ-SGD, per-sample EF: 2-D, rows = samples,
// equal cols (`aqsgd` is true for both).
inline void check_step_shapes(const std::vector<std::string>& paths, const std::vector<tensor>& steps, bool aqsgd) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const pipecodec::shape& s = steps[i].shp;
    const std::string which = "step " + std::to_string(i + 1) + " ('" + paths[i] + "')";
    if (aqsgd && s.ndim != 2) throw error(which + " is 1-D; per-sample state needs rows x cols (a row per sample)");
    if (aqsgd && s.cols != steps[0].shp.cols)
      throw error(which + " has " + std::to_string(s.cols) + " cols, step 1 has " + std::to_string(steps[0].shp.cols));
    if (!aqsgd && s != steps[0].shp)
      throw error(which + " has shape " + shape_text(s) + ", step 1 has " + shape_text(steps[0].shp));
  }
}

inline void run_eval_state(const args& a) {
  if (a.has("dtype") || a.has("shape")) throw error("--state reads .npy steps only (no --dtype/--shape)");
  if (a.positional.empty()) throw error("expected STEP1.npy [STEP2.npy ...], got 0 argument(s)");
  pipecodec::tools::state_eval_options o;
  o.scheme = parse_state_option(a.get("state"));
  const bool aqsgd = o.scheme == pipecodec::tools::state_scheme::aqsgd;
  const bool per_sample = aqsgd || o.scheme == pipecodec::tools::state_scheme::ef_sample;
  o.codec = parse_spec_option(a);
  o.seed = seed_option(a);
  if (a.has("state-dtype") && !pipecodec::detail::parse_dtype(a.get("state-dtype"), o.state_type))
    throw error("option '--state-dtype': expected fp32, fp16 or bf16, got '" + a.get("state-dtype") + "'");
  if (!per_sample && a.has("ids")) throw error("--ids is for --state aqsgd or ef-sample only");
  if (!aqsgd && a.has("warmup-steps")) throw error("--warmup-steps is for --state aqsgd only");
  if (per_sample && !a.has("ids"))
    throw error("--state " + a.get("state") + " needs --ids IDS.npy (steps x rows int64 sample ids)");
  if (a.has("warmup-steps")) o.warmup_steps = parse_uint("warmup-steps", a.get("warmup-steps"));

  std::vector<tensor> steps;
  for (const std::string& p : a.positional) steps.push_back(load_tensor(p, a));
  check_step_shapes(a.positional, steps, per_sample);
  std::vector<uint64_t> ids;
  std::vector<pipecodec::const_tensor_view> views;
  std::vector<const uint64_t*> id_rows;
  if (per_sample) ids = load_ids(a.get("ids"), steps);
  for (size_t i = 0; i < steps.size(); ++i) {
    views.push_back(steps[i].view());
    if (per_sample) id_rows.push_back(ids.data() + i * steps[0].shp.rows);
  }
  pipecodec::tools::state_eval_result res;
  const pipecodec::status st = pipecodec::tools::state_eval(o, views, id_rows, res);
  if (!pipecodec::ok(st))
    throw error("--state " + a.get("state") + " failed at step " + std::to_string(res.steps.size() + 1) + ": " +
                pipecodec::to_string(st));
  pipecodec::tools::print_state_eval(stdout, res);
}

}  // namespace cli
