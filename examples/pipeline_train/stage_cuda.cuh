// One pipeline stage on the GPU, the twin of stage.hpp: its cuBLAS layer, the CUDA endpoints
// of the boundaries it touches and the device buffers of one step, all on the stage's own
// stream. Payloads are encoded into device buffers, copied to host memory for the transport
// (in-process or MPI, without CUDA-aware MPI) and copied back to the device before decoding.
// Each decode is followed by the receiver's last_status(), which synchronizes and returns the
// device's verdict on the payload. The forward payloads of a step stay on the device until
// its backward pass: a shared-mask gradient travels at their positions.
#pragma once

#include <pipecodec/policy/cuda_endpoint.cuh>

#include <algorithm>
#include <vector>

#include "dense_cuda.cuh"
#include "transport.hpp"

namespace train {

namespace pc = pipecodec;

class stage_cuda {
 public:
  // What codec_seconds() and compute_seconds() measure (CUDA events).
  static constexpr const char* clock_name = "GPU";

  // Stage s of `stages`, a layer in -> out, batches of at most `batch` rows; `samples` sizes
  // the AQ-SGD stores (one slot per training sample).
  stage_cuda(int s, int stages, int in, int out, int batch, const pc::policy& pol, uint64_t samples, uint64_t seed)
      : s_(s), last_(s == stages - 1), layer_(in, out, !last_, seed + uint64_t(s), stream_.get()),
        x_(size_t(batch) * size_t(in)), y_(size_t(batch) * size_t(out)), dy_(size_t(batch) * size_t(out)),
        dx_(size_t(batch) * size_t(in)), xent_(batch) {
    auto opts = [&](int cols) {
      pc::cuda::endpoint_options o;
      o.max_shape = pc::shape(uint64_t(batch), uint64_t(cols));
      o.samples = samples;
      o.stream = stream_.get();
      return o;
    };
    size_t cap = 0;
    if (s > 0) {  // boundary s-1: receive activations, send gradients
      check(fwd_in_.init(pol, uint32_t(s - 1), pc::direction::fwd, opts(in)), "fwd receiver", s);
      check(bwd_out_.init(pol, uint32_t(s - 1), pc::direction::bwd, opts(in)), "bwd sender", s);
      cap = std::max(cap, bwd_out_.encoded_bytes());
      fwd_in_buf_ = device_array<uint8_t>(fwd_in_.encoded_bytes());
    }
    if (!last_) {  // boundary s: send activations, receive gradients
      check(fwd_out_.init(pol, uint32_t(s), pc::direction::fwd, opts(out)), "fwd sender", s);
      check(bwd_in_.init(pol, uint32_t(s), pc::direction::bwd, opts(out)), "bwd receiver", s);
      cap = std::max(cap, bwd_in_.encoded_bytes());
      fwd_out_buf_ = device_array<uint8_t>(fwd_out_.encoded_bytes());
    }
    buf_ = device_array<uint8_t>(cap);
    host_.resize(std::max({cap, fwd_in_buf_.size(), fwd_out_buf_.size()}));
  }

  // Forward pass of `rows` rows; stage 0 copies `input` (host) to the device.
  void forward(transport& t, const float* input, int rows, const pc::step_info& at) {
    const cudaStream_t st = stream_.get();
    if (s_ == 0) {
      check_cuda(cudaMemcpyAsync(x_.get(), input, size_t(rows) * size_t(layer_.in) * sizeof(float),
                                 cudaMemcpyHostToDevice, st),
                 "copy input");
    } else {
      fwd_in_len_ = recv(t, s_ - 1, tag_fwd, fwd_in_buf_);
      {
        gpu_scope c(codec_s_, timer_, st);
        check(fwd_in_.decode(fwd_in_buf_.get(), fwd_in_len_, view(x_, rows, layer_.in), at, st), "decode activations",
              s_);
      }
      check(fwd_in_.last_status(), "activations payload rejected", s_);
    }
    {
      gpu_scope c(compute_s_, timer_, st);
      layer_.forward(x_.get(), rows, y_.get());
    }
    if (!last_)
      fwd_out_len_ = send(t, fwd_out_, y_, rows, layer_.out, s_ + 1, tag_fwd, at, fwd_out_buf_, {},
                          "encode activations");
  }

  // Last stage: softmax cross-entropy of the logits (summed), counting correct predictions;
  // with `grad` it keeps dL/dlogits for backward().
  double loss(const uint8_t* labels, int rows, bool grad, int& correct) {
    return xent_(y_.get(), labels, rows, layer_.out, grad ? dy_.get() : nullptr, correct, stream_.get());
  }

  // Backward pass; the last stage starts from the gradient loss() kept, the others receive
  // their output gradient.
  void backward(transport& t, int rows, const pc::step_info& at) {
    const cudaStream_t st = stream_.get();
    if (!last_) {
      const size_t n = recv(t, s_ + 1, tag_bwd, buf_);
      {
        gpu_scope c(codec_s_, timer_, st);
        check(bwd_in_.decode(buf_.get(), n, view(dy_, rows, layer_.out), at, st, {fwd_out_buf_.get(), fwd_out_len_}),
              "decode gradients", s_);
      }
      check(bwd_in_.last_status(), "gradients payload rejected", s_);
    }
    {
      gpu_scope c(compute_s_, timer_, st);
      layer_.backward(x_.get(), y_.get(), dy_.get(), rows, s_ > 0 ? dx_.get() : nullptr);
    }
    if (s_ > 0)
      send(t, bwd_out_, dx_, rows, layer_.in, s_ - 1, tag_bwd, at, buf_, {fwd_in_buf_.get(), fwd_in_len_},
           "encode gradients");
  }

  void sgd(float lr, float momentum) {
    gpu_scope c(compute_s_, timer_, stream_.get());
    layer_.sgd(lr, momentum);
  }

  void set_inference(pc::inference_mode m) {
    fwd_in_.set_inference(m);
    bwd_in_.set_inference(m);
    fwd_out_.set_inference(m);
    bwd_out_.set_inference(m);
  }
  // Encode and decode counters of this stage's side of its boundaries.
  const pc::endpoint_counters& fwd_sent() const { return fwd_out_.counters(); }
  const pc::endpoint_counters& bwd_sent() const { return bwd_out_.counters(); }
  // GPU seconds in encode/decode calls and in the layer's own work (training and inference).
  double codec_seconds() const { return codec_s_; }
  double compute_seconds() const { return compute_s_; }

 private:
  static pc::tensor_view view(device_array<float>& v, int rows, int cols) {
    return pc::tensor_view{v.get(), pc::dtype::f32, pc::shape(uint64_t(rows), uint64_t(cols))};
  }
  // Receives a payload of at most dst.size() bytes through host memory into `dst`; returns its size.
  size_t recv(transport& t, int from, int tag, device_array<uint8_t>& dst) {
    const size_t n = t.recv(from, tag, host_.data(), dst.size());
    // host_ is not written again before the decode's last_status() has synchronized the stream.
    check_cuda(cudaMemcpyAsync(dst.get(), host_.data(), n, cudaMemcpyHostToDevice, stream_.get()), "copy payload in");
    return n;
  }
  // Encodes v into `buf` (device), copies it to host memory and sends it; returns the payload size.
  size_t send(transport& t, pc::cuda::sender_endpoint& e, device_array<float>& v, int rows, int cols, int to,
              int tag, const pc::step_info& at, device_array<uint8_t>& buf, pc::payload_ref mask, const char* what) {
    const cudaStream_t st = stream_.get();
    size_t len = 0;
    {
      gpu_scope c(codec_s_, timer_, st);
      check(e.encode(view(v, rows, cols), at, buf.get(), buf.size(), st, &len, mask), what, s_);
    }
    check_cuda(cudaMemcpyAsync(host_.data(), buf.get(), len, cudaMemcpyDeviceToHost, st), "copy payload out");
    check_cuda(cudaStreamSynchronize(st), what);
    t.send(to, tag, host_.data(), len);
    return len;
  }

  cuda_stream stream_;  // first: everything below uses it, and it outlives them
  gpu_timer timer_;
  int s_;
  bool last_;
  dense_cuda layer_;
  device_array<float> x_, y_, dy_, dx_;
  softmax_xent_cuda xent_;
  double codec_s_ = 0, compute_s_ = 0;
  device_array<uint8_t> buf_;                       // gradients, either way
  device_array<uint8_t> fwd_in_buf_, fwd_out_buf_;  // this step's activations payloads
  size_t fwd_in_len_ = 0, fwd_out_len_ = 0;
  std::vector<uint8_t> host_;  // every payload on its way between the device and the transport
  pc::cuda::receiver_endpoint fwd_in_, bwd_in_;
  pc::cuda::sender_endpoint fwd_out_, bwd_out_;
};

}  // namespace train
