// One pipeline stage: its layer, the endpoints of the boundaries it touches and the buffers
// of one step. Stage s receives activations over boundary s-1 and sends its own over boundary
// s; gradients travel the other way. Every tensor that crosses a boundary is encoded into
// bytes, moved by the transport and decoded, in-process too. The forward payloads of a
// step are kept until its backward pass: a shared-mask gradient travels at their positions.
#pragma once

#include <pipecodec/policy/endpoint.hpp>

#include <time.h>

#include <algorithm>
#include <memory>

#include "dense.hpp"
#include "transport.hpp"

namespace train {

namespace pc = pipecodec;

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
  // Stage s of `stages`, a layer in -> out, batches of at most `batch` rows; `samples` sizes
  // the AQ-SGD stores (one slot per training sample).
  stage(int s, int stages, int in, int out, int batch, const pc::policy& pol, uint64_t samples, uint64_t seed)
      : s_(s), last_(s == stages - 1), layer_(in, out, !last_, seed + uint64_t(s)) {
    x_.resize(size_t(batch) * in);
    y_.resize(size_t(batch) * out);
    dy_.resize(size_t(batch) * out);
    dx_.resize(size_t(batch) * in);
    auto opts = [&](int cols) {
      pc::host::endpoint_options o;
      o.max_shape = pc::shape(uint64_t(batch), uint64_t(cols));
      o.samples = samples;
      return o;
    };
    size_t cap = 0;
    if (s > 0) {  // boundary s-1: receive activations, send gradients
      check(fwd_in_.init(pol, uint32_t(s - 1), pc::direction::fwd, opts(in)), "fwd receiver", s);
      check(bwd_out_.init(pol, uint32_t(s - 1), pc::direction::bwd, opts(in)), "bwd sender", s);
      cap = std::max(cap, bwd_out_.encoded_bytes());
      fwd_in_buf_.resize(fwd_in_.encoded_bytes());
    }
    if (!last_) {  // boundary s: send activations, receive gradients
      check(fwd_out_.init(pol, uint32_t(s), pc::direction::fwd, opts(out)), "fwd sender", s);
      check(bwd_in_.init(pol, uint32_t(s), pc::direction::bwd, opts(out)), "bwd receiver", s);
      cap = std::max(cap, bwd_in_.encoded_bytes());
      fwd_out_buf_.resize(fwd_out_.encoded_bytes());
    }
    buf_.resize(cap);
  }

  // What codec_seconds() and compute_seconds() measure.
  static constexpr const char* clock_name = "CPU";

  // Forward pass of `rows` rows; stage 0 reads `input`.
  void forward(transport& t, const float* input, int rows, const pc::step_info& at) {
    const float* x = input;
    if (s_ > 0) {
      fwd_in_len_ = t.recv(s_ - 1, tag_fwd, fwd_in_buf_.data(), fwd_in_buf_.size());
      cpu_scope c(codec_cpu_, CLOCK_THREAD_CPUTIME_ID);
      check(fwd_in_.decode(fwd_in_buf_.data(), fwd_in_len_, view(x_, rows, layer_.in), at), "decode activations", s_);
      x = x_.data();
    }
    x_used_ = x;
    {
      cpu_scope c(compute_cpu_, CLOCK_PROCESS_CPUTIME_ID);
      layer_.forward(x, rows, y_.data());
    }
    if (!last_)
      fwd_out_len_ = send(t, fwd_out_, y_, rows, layer_.out, s_ + 1, tag_fwd, at, fwd_out_buf_, {}, "encode activations");
  }

  // Last stage: softmax cross-entropy of the logits (summed), counting correct predictions;
  // with `grad` it keeps dL/dlogits for backward().
  double loss(const uint8_t* labels, int rows, bool grad, int& correct) {
    return softmax_xent(y_.data(), labels, rows, layer_.out, grad ? dy_.data() : nullptr, correct);
  }

  // Backward pass; the last stage starts from the gradient loss() kept, the others receive
  // their output gradient.
  void backward(transport& t, int rows, const pc::step_info& at) {
    if (!last_) {
      const size_t n = t.recv(s_ + 1, tag_bwd, buf_.data(), buf_.size());
      cpu_scope c(codec_cpu_, CLOCK_THREAD_CPUTIME_ID);
      check(bwd_in_.decode(buf_.data(), n, view(dy_, rows, layer_.out), at, {fwd_out_buf_.data(), fwd_out_len_}),
            "decode gradients", s_);
    }
    {
      cpu_scope c(compute_cpu_, CLOCK_PROCESS_CPUTIME_ID);
      layer_.backward(x_used_, y_.data(), dy_.data(), rows, s_ > 0 ? dx_.data() : nullptr);
    }
    if (s_ > 0)
      send(t, bwd_out_, dx_, rows, layer_.in, s_ - 1, tag_bwd, at, buf_, {fwd_in_buf_.data(), fwd_in_len_},
           "encode gradients");
  }

  void sgd(float lr, float momentum) {
    cpu_scope c(compute_cpu_, CLOCK_PROCESS_CPUTIME_ID);
    layer_.sgd(lr, momentum);
  }

  void set_inference(pc::inference_mode m) {
    fwd_in_.set_inference(m);
    bwd_in_.set_inference(m);
    fwd_out_.set_inference(m);
    bwd_out_.set_inference(m);
  }
  // Encode and decode counters of this stage's side of its boundaries.
  const pc::host::endpoint_counters& fwd_sent() const { return fwd_out_.counters(); }
  const pc::host::endpoint_counters& bwd_sent() const { return bwd_out_.counters(); }
  // CPU seconds in encode/decode calls and in the layer's own work (training and inference).
  double codec_seconds() const { return codec_cpu_; }
  double compute_seconds() const { return compute_cpu_; }

 private:
  static pc::tensor_view view(std::vector<float>& v, int rows, int cols) {
    return pc::tensor_view{v.data(), pc::dtype::f32, pc::shape(uint64_t(rows), uint64_t(cols))};
  }
  // Encodes v into `buf` and sends it; returns the payload size.
  size_t send(transport& t, pc::host::sender_endpoint& e, std::vector<float>& v, int rows, int cols, int to,
              int tag, const pc::step_info& at, std::vector<uint8_t>& buf, pc::payload_ref mask, const char* what) {
    size_t len = 0;
    {
      cpu_scope c(codec_cpu_, CLOCK_THREAD_CPUTIME_ID);
      check(e.encode(view(v, rows, cols), at, buf.data(), buf.size(), &len, mask), what, s_);
    }
    t.send(to, tag, buf.data(), len);
    return len;
  }

  int s_;
  bool last_;
  dense layer_;
  std::vector<float> x_, y_, dy_, dx_;
  const float* x_used_ = nullptr;
  double codec_cpu_ = 0, compute_cpu_ = 0;
  std::vector<uint8_t> buf_;                       // gradients, either way
  std::vector<uint8_t> fwd_in_buf_, fwd_out_buf_;  // this step's activations payloads
  size_t fwd_in_len_ = 0, fwd_out_len_ = 0;
  pc::host::receiver_endpoint fwd_in_, bwd_in_;
  pc::host::sender_endpoint fwd_out_, bwd_out_;
};

}  // namespace train
