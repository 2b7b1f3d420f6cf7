// One pipeline stage on the GPU, the twin of stage.hpp: its cuBLAS layer, the CUDA endpoints
// of the boundaries it touches and the device buffers of a step's micro-batches, one slot
// each, all on the stage's own stream. Payloads arrive and leave in host memory (the
// driver's messages, for the in-process or MPI transport without CUDA-aware MPI): each is
// copied to the device before decoding and from it after encoding. Each decode is followed
// by the receiver's last_status(), which synchronizes and returns the device's verdict on
// the payload. A slot's forward payloads stay on the device until its backward pass: a
// shared-mask gradient travels at their positions.
#pragma once

#include <pipecodec/policy/cuda_endpoint.cuh>

#include <vector>

#include "dense_cuda.cuh"
#include "stage_endpoints.hpp"

namespace train {

class stage_cuda {
 public:
  // What codec_seconds() and compute_seconds() measure (CUDA events).
  static constexpr const char* clock_name = "GPU";

  // Stage s of `stages`, a layer in -> out, micro-batches of at most `rows` rows, `slots`
  // micro-batches per step; `samples` sizes the per-sample stores (one slot per training sample).
  stage_cuda(int s, int stages, int in, int out, int rows, int slots, const pc::policy& pol, uint64_t samples,
             uint64_t seed)
      : s_(s), last_(s == stages - 1), layer_(in, out, !last_, seed + uint64_t(s), stream_.get()),
        eps_(pol, s, stages, in, out, slots,
             [&](int cols) {
               pc::cuda::endpoint_options o;
               o.max_shape = pc::shape(uint64_t(rows), uint64_t(cols));
               o.samples = samples;
               o.stream = stream_.get();
               return o;
             }),
        dx_(size_t(rows) * size_t(in)), xent_(rows) {
    for (int i = 0; i < slots; ++i) {
      slot_.emplace_back();
      slot& b = slot_.back();
      b.x = device_array<float>(size_t(rows) * size_t(in));
      b.y = device_array<float>(size_t(rows) * size_t(out));
      b.dy = device_array<float>(size_t(rows) * size_t(out));
      b.fwd_in = device_array<uint8_t>(eps_.fwd_in_bytes());
      b.fwd_out = device_array<uint8_t>(eps_.fwd_out_bytes());
    }
    bwd_ = device_array<uint8_t>(std::max(eps_.bwd_in_bytes(), eps_.bwd_out_bytes()));
  }

  const stage_endpoints<pc::cuda::sender_endpoint, pc::cuda::receiver_endpoint>& endpoints() const { return eps_; }

  // Forward pass of slot m: stage 0 copies `input` (host, rows x in floats) to the device,
  // the others decode the payload `in` (host, len bytes). Encodes the output into `out`
  // (host, cap bytes) unless this is the last stage; returns the payload's length.
  size_t forward(int m, const float* input, const uint8_t* in, size_t len, int rows, const pc::step_info& at,
                 uint8_t* out, size_t cap) {
    const cudaStream_t st = stream_.get();
    slot& b = slot_[size_t(m)];
    if (s_ == 0) {
      check_cuda(cudaMemcpyAsync(b.x.get(), input, size_t(rows) * size_t(layer_.in) * sizeof(float),
                                 cudaMemcpyHostToDevice, st),
                 "copy input");
    } else {
      b.fwd_in_len = copy_in(in, len, b.fwd_in);
      {
        gpu_scope c(codec_s_, timer_, st);
        check(eps_.fwd_in(m).decode(b.fwd_in.get(), len, view(b.x, rows, layer_.in), at, st), "decode activations",
              s_);
      }
      check(eps_.fwd_in(m).last_status(), "activations payload rejected", s_);
    }
    {
      gpu_scope c(compute_s_, timer_, st);
      layer_.forward(b.x.get(), rows, b.y.get());
    }
    if (last_) return 0;
    b.fwd_out_len = encode(eps_.fwd_out(m), b.y, rows, layer_.out, at, b.fwd_out, {}, out, cap, "encode activations");
    return b.fwd_out_len;
  }

  // Last stage: softmax cross-entropy of slot m's logits (summed), counting correct
  // predictions; with `grad` it keeps dL/dlogits of the loss summed over the step and
  // divided by `norm` for backward().
  double loss(int m, const uint8_t* labels, int rows, bool grad, int& correct, int norm) {
    slot& b = slot_[size_t(m)];
    return xent_(b.y.get(), labels, rows, layer_.out, grad ? b.dy.get() : nullptr, correct, norm, stream_.get());
  }

  // Backward pass of slot m: the last stage starts from the gradient loss() kept, the others
  // decode the payload `in` (host). Encodes the input gradient into `out` (host) unless this
  // is stage 0; returns the payload's length. The layer's gradients add up over the step.
  size_t backward(int m, const uint8_t* in, size_t len, int rows, const pc::step_info& at, uint8_t* out, size_t cap) {
    const cudaStream_t st = stream_.get();
    slot& b = slot_[size_t(m)];
    if (!last_) {
      copy_in(in, len, bwd_);
      {
        gpu_scope c(codec_s_, timer_, st);
        check(eps_.bwd_in(m).decode(bwd_.get(), len, view(b.dy, rows, layer_.out), at, st,
                                    {b.fwd_out.get(), b.fwd_out_len}),
              "decode gradients", s_);
      }
      check(eps_.bwd_in(m).last_status(), "gradients payload rejected", s_);
    }
    {
      gpu_scope c(compute_s_, timer_, st);
      layer_.backward(b.x.get(), b.y.get(), b.dy.get(), rows, s_ > 0 ? dx_.get() : nullptr, accumulate_);
    }
    accumulate_ = true;
    if (s_ == 0) return 0;
    return encode(eps_.bwd_out(m), dx_, rows, layer_.in, at, bwd_, {b.fwd_in.get(), b.fwd_in_len}, out, cap,
                  "encode gradients");
  }

  // One optimizer step over the gradients of the step's micro-batches.
  void sgd(float lr, float momentum) {
    gpu_scope c(compute_s_, timer_, stream_.get());
    layer_.sgd(lr, momentum);
    accumulate_ = false;
  }

  void set_inference(pc::inference_mode m) { eps_.set_inference(m); }
  // GPU seconds in encode/decode calls and in the layer's own work (training and inference).
  double codec_seconds() const { return codec_s_; }
  double compute_seconds() const { return compute_s_; }

 private:
  struct slot {
    device_array<float> x, y, dy;           // input, output, output gradient
    device_array<uint8_t> fwd_in, fwd_out;  // the forward payloads, until backward
    size_t fwd_in_len = 0, fwd_out_len = 0;
  };
  static pc::tensor_view view(device_array<float>& v, int rows, int cols) {
    return pc::tensor_view{v.get(), pc::dtype::f32, pc::shape(uint64_t(rows), uint64_t(cols))};
  }
  // Copies a payload of len bytes from host memory into `dst` (device); returns len. `in`
  // stays untouched until the decode's last_status() has synchronized the stream.
  size_t copy_in(const uint8_t* in, size_t len, device_array<uint8_t>& dst) {
    if (len > dst.size()) check(pc::status::buffer_too_small, "payload larger than its device buffer", s_);
    check_cuda(cudaMemcpyAsync(dst.get(), in, len, cudaMemcpyHostToDevice, stream_.get()), "copy payload in");
    return len;
  }
  // Encodes v into `dev` (device) and copies the payload to `out` (host); returns its size.
  size_t encode(pc::cuda::sender_endpoint& e, device_array<float>& v, int rows, int cols, const pc::step_info& at,
                device_array<uint8_t>& dev, pc::payload_ref mask, uint8_t* out, size_t cap, const char* what) {
    const cudaStream_t st = stream_.get();
    size_t len = 0;
    {
      gpu_scope c(codec_s_, timer_, st);
      check(e.encode(view(v, rows, cols), at, dev.get(), dev.size(), st, &len, mask), what, s_);
    }
    if (len > cap) check(pc::status::buffer_too_small, what, s_);
    check_cuda(cudaMemcpyAsync(out, dev.get(), len, cudaMemcpyDeviceToHost, st), "copy payload out");
    check_cuda(cudaStreamSynchronize(st), what);
    return len;
  }

  cuda_stream stream_;  // first: everything below uses it, and it outlives them
  gpu_timer timer_;
  int s_;
  bool last_;
  dense_cuda layer_;
  stage_endpoints<pc::cuda::sender_endpoint, pc::cuda::receiver_endpoint> eps_;
  std::vector<slot> slot_;
  device_array<float> dx_;
  device_array<uint8_t> bwd_;  // gradient payloads, either way
  softmax_xent_cuda xent_;
  bool accumulate_ = false;
  double codec_s_ = 0, compute_s_ = 0;
};

}  // namespace train
