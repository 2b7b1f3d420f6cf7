// One pipeline stage: its layer, the endpoints of the boundaries it touches and the buffers
// of the micro-batches of one step, one slot each. Stage s decodes activations received
// over boundary s-1 and encodes its own for boundary s; gradients travel the other way. The
// driver (pipeline.hpp) moves the payload bytes; the stage only encodes and decodes them.
// The forward payloads of a slot stay where forward() found and wrote them until its
// backward(): a shared-mask gradient travels at their positions.
#pragma once

#include <pipecodec/policy/endpoint.hpp>

#include <time.h>

#include <vector>

#include "dense.hpp"
#include "stage_endpoints.hpp"

namespace train {

// CPU seconds of a clock: the codec's share is measured in CPU time, which stays meaningful
// on a shared machine where wall time depends on the other processes.
inline double cpu_seconds(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Adds the CPU time of its scope to `acc`. Codec calls run on the calling thread (thread
// clock); BLAS calls may use helper threads (process clock).
class cpu_scope {
 public:
  cpu_scope(double& acc, clockid_t c) : acc_(acc), c_(c), t0_(cpu_seconds(c)) {}
  ~cpu_scope() { acc_ += cpu_seconds(c_) - t0_; }

 private:
  double& acc_;
  clockid_t c_;
  double t0_;
};

class stage {
 public:
  // What codec_seconds() and compute_seconds() measure.
  static constexpr const char* clock_name = "CPU";

  // Stage s of `stages`, a layer in -> out, micro-batches of at most `rows` rows, `slots`
  // micro-batches per step; `samples` sizes the per-sample stores (one slot per training sample).
  stage(int s, int stages, int in, int out, int rows, int slots, const pc::policy& pol, uint64_t samples,
        uint64_t seed)
      : s_(s), last_(s == stages - 1), layer_(in, out, !last_, seed + uint64_t(s)),
        eps_(pol, s, stages, in, out, slots,
             [&](int cols) {
               pc::host::endpoint_options o;
               o.max_shape = pc::shape(uint64_t(rows), uint64_t(cols));
               o.samples = samples;
               return o;
             }),
        slot_(size_t(slots)) {
    for (slot& b : slot_) {
      b.x.resize(size_t(rows) * size_t(in));
      b.y.resize(size_t(rows) * size_t(out));
      b.dy.resize(size_t(rows) * size_t(out));
    }
    dx_.resize(size_t(rows) * size_t(in));
  }

  const stage_endpoints<pc::host::sender_endpoint, pc::host::receiver_endpoint>& endpoints() const { return eps_; }

  // The layer alone on `rows` input rows (what forward() encodes, before any codec).
  void layer_forward(const float* x, int rows, float* y) const { layer_.forward(x, rows, y); }

  // Forward pass of slot m: stage 0 reads `input` (rows x in floats), the others decode the
  // payload `in` (len bytes). Encodes the output into `out` (cap bytes) unless this is the
  // last stage; returns the payload's length. `input`, `in` and `out` stay valid and
  // unchanged until backward(m).
  size_t forward(int m, const float* input, const uint8_t* in, size_t len, int rows, const pc::step_info& at,
                 uint8_t* out, size_t cap) {
    slot& b = slot_[size_t(m)];
    b.x_used = input;
    b.fwd_in = {in, len};
    if (s_ > 0) {
      cpu_scope c(codec_cpu_, CLOCK_THREAD_CPUTIME_ID);
      check(eps_.fwd_in(m).decode(in, len, view(b.x, rows, layer_.in), at), "decode activations", s_);
      b.x_used = b.x.data();
    }
    {
      cpu_scope c(compute_cpu_, CLOCK_PROCESS_CPUTIME_ID);
      layer_.forward(b.x_used, rows, b.y.data());
    }
    if (last_) return 0;
    b.fwd_out = {out, encode(eps_.fwd_out(m), b.y, rows, layer_.out, at, out, cap, {}, "encode activations")};
    return b.fwd_out.size;
  }

  // Last stage: softmax cross-entropy of slot m's logits (summed), counting correct
  // predictions; with `grad` it keeps dL/dlogits of the loss summed over the step and
  // divided by `norm` (the step's rows) for backward().
  double loss(int m, const uint8_t* labels, int rows, bool grad, int& correct, int norm) {
    slot& b = slot_[size_t(m)];
    return softmax_xent(b.y.data(), labels, rows, layer_.out, grad ? b.dy.data() : nullptr, correct, norm);
  }

  // Backward pass of slot m: the last stage starts from the gradient loss() kept, the others
  // decode the payload `in`. Encodes the input gradient into `out` unless this is stage 0;
  // returns the payload's length. The layer's gradients add up over a step's micro-batches.
  size_t backward(int m, const uint8_t* in, size_t len, int rows, const pc::step_info& at, uint8_t* out, size_t cap) {
    slot& b = slot_[size_t(m)];
    if (!last_) {
      cpu_scope c(codec_cpu_, CLOCK_THREAD_CPUTIME_ID);
      check(eps_.bwd_in(m).decode(in, len, view(b.dy, rows, layer_.out), at, b.fwd_out), "decode gradients", s_);
    }
    {
      cpu_scope c(compute_cpu_, CLOCK_PROCESS_CPUTIME_ID);
      layer_.backward(b.x_used, b.y.data(), b.dy.data(), rows, s_ > 0 ? dx_.data() : nullptr, accumulate_);
    }
    accumulate_ = true;
    if (s_ == 0) return 0;
    return encode(eps_.bwd_out(m), dx_, rows, layer_.in, at, out, cap, b.fwd_in, "encode gradients");
  }

  // One optimizer step over the gradients of the step's micro-batches.
  void sgd(float lr, float momentum) {
    cpu_scope c(compute_cpu_, CLOCK_PROCESS_CPUTIME_ID);
    layer_.sgd(lr, momentum);
    accumulate_ = false;
  }

  void set_inference(pc::inference_mode m) { eps_.set_inference(m); }
  // CPU seconds in encode/decode calls and in the layer's own work (training and inference).
  double codec_seconds() const { return codec_cpu_; }
  double compute_seconds() const { return compute_cpu_; }

 private:
  struct slot {
    std::vector<float> x, y, dy;    // decoded input (s > 0), output, output gradient
    const float* x_used = nullptr;  // the layer's input: x, or the driver's rows on stage 0
    pc::payload_ref fwd_in, fwd_out;
  };
  static pc::tensor_view view(std::vector<float>& v, int rows, int cols) {
    return pc::tensor_view{v.data(), pc::dtype::f32, pc::shape(uint64_t(rows), uint64_t(cols))};
  }
  size_t encode(pc::host::sender_endpoint& e, std::vector<float>& v, int rows, int cols, const pc::step_info& at,
                uint8_t* out, size_t cap, pc::payload_ref mask, const char* what) {
    cpu_scope c(codec_cpu_, CLOCK_THREAD_CPUTIME_ID);
    size_t len = 0;
    check(e.encode(view(v, rows, cols), at, out, cap, &len, mask), what, s_);
    return len;
  }

  int s_;
  bool last_;
  dense layer_;
  stage_endpoints<pc::host::sender_endpoint, pc::host::receiver_endpoint> eps_;
  std::vector<slot> slot_;
  std::vector<float> dx_;
  bool accumulate_ = false;
  double codec_cpu_ = 0, compute_cpu_ = 0;
};

}  // namespace train
