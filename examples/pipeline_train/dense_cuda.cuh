// One stage's layer on the GPU, the twin of dense.hpp: y = x W^T + b (ReLU except on the last
// stage), its backward pass and SGD with momentum, with cuBLAS sgemm and small kernels on the
// stage's stream. Row-major throughout; cuBLAS is column-major, where a row-major matrix reads
// as its transpose, so each row-major product C = A B is computed as C^T = B^T A^T. Weights
// start from the host's He initialisation (stage_common.hpp): the same as the host build's.
#pragma once

#include <cublas_v2.h>
#include <pipecodec/cuda/detail/portable.cuh>

#include <vector>

#include "cuda_util.cuh"
#include "stage_common.hpp"

namespace train {

inline void check_cublas(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "pipeline_train_cuda: %s: %s\n", what, cublasGetStatusString(e));
    std::exit(1);
  }
}

// Kernels: one thread per element (per column, per row for the reductions). Templates over
// the element type because kernels defined in a header must be.
namespace kernels {

// The library's launch helper: <<<>>> under nvcc, the CPU execution in the emulated test build.
using pipecodec::cuda::detail::launch;
constexpr int threads = 256;
inline unsigned blocks(size_t n) { return unsigned((n + threads - 1) / threads); }

template <class T>
__global__ void bias_act(T* y, const T* b, size_t n, int cols, bool relu) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T v = y[i] + b[i % size_t(cols)];
  y[i] = relu && v < T(0) ? T(0) : v;  // NaN stays NaN, as std::max(v, 0) on the host
}

template <class T>
__global__ void relu_backward(T* dy, const T* y, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && y[i] <= T(0)) dy[i] = T(0);
}

// db[c] = sum over rows of dy[r][c] (added to db[c] when `accumulate`), rows in order as on the host.
template <class T>
__global__ void bias_grad(const T* dy, T* db, int rows, int cols, bool accumulate) {
  const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= cols) return;
  T s = accumulate ? db[c] : T(0);
  for (int r = 0; r < rows; ++r) s += dy[size_t(r) * size_t(cols) + size_t(c)];
  db[c] = s;
}

template <class T>
__global__ void sgd(T* w, T* v, const T* g, size_t n, T lr, T momentum) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  v[i] = momentum * v[i] + g[i];
  w[i] -= lr * v[i];
}

// Softmax cross-entropy of one row per thread, the arithmetic of dense.hpp's softmax_xent:
// loss[r], hit[r] = argmax (first maximum) == label, and when grad is not null dL/dlogits of
// the loss summed and divided by `norm` (the rows of the whole step).
template <class T>
__global__ void softmax_xent(const T* logits, const uint8_t* labels, int rows, int classes, T* grad, double* loss,
                             int* hit, int norm) {
  const int r = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= rows) return;
  const T* z = logits + size_t(r) * size_t(classes);
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (z[best] < z[c]) best = c;
  double sum = 0;
  for (int c = 0; c < classes; ++c) sum += exp(double(z[c] - z[best]));
  loss[r] = log(sum) - double(z[labels[r]] - z[best]);
  hit[r] = best == int(labels[r]);
  if (grad)
    for (int c = 0; c < classes; ++c) {
      const double p = exp(double(z[c] - z[best])) / sum;
      grad[size_t(r) * size_t(classes) + size_t(c)] = T((p - (c == int(labels[r]) ? 1.0 : 0.0)) / norm);
    }
}

}  // namespace kernels

class cublas_handle {
 public:
  explicit cublas_handle(cudaStream_t s) {
    check_cublas(cublasCreate(&h_), "cublasCreate");
    check_cublas(cublasSetStream(h_, s), "cublasSetStream");
  }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
  ~cublas_handle() { (void)cublasDestroy(h_); }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

class dense_cuda {
 public:
  const int in, out;
  const bool relu;

  dense_cuda(int in_, int out_, bool relu_, uint64_t seed, cudaStream_t s)
      : in(in_), out(out_), relu(relu_), s_(s), blas_(s), w_(size_t(in) * size_t(out)), dw_(w_.size()),
        vw_(w_.size()), b_(size_t(out)), db_(size_t(out)), vb_(size_t(out)) {
    const std::vector<float> w = he_init(in, out, seed);
    check_cuda(cudaMemcpyAsync(w_.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, s_),
               "copy weights");
    check_cuda(cudaMemsetAsync(vw_.get(), 0, vw_.size() * sizeof(float), s_), "zero momenta");
    check_cuda(cudaMemsetAsync(b_.get(), 0, b_.size() * sizeof(float), s_), "zero biases");
    check_cuda(cudaMemsetAsync(vb_.get(), 0, vb_.size() * sizeof(float), s_), "zero momenta");
    check_cuda(cudaStreamSynchronize(s_), "initialise the layer");  // before `w` goes
  }

  // y[rows x out] from x[rows x in] (device pointers): y^T = W x^T.
  void forward(const float* x, int rows, float* y) const {
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasSgemm(blas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one, w_.get(), in, x, in, &zero,
                             y, out),
                 "forward sgemm");
    const size_t n = size_t(rows) * size_t(out);
    kernels::launch<kernels::bias_act<float>>(kernels::blocks(n), kernels::threads, 0, s_, y, b_.get(), n, out, relu);
    check_cuda(cudaGetLastError(), "bias kernel");
  }

  // Given dL/dy (modified in place by the ReLU mask, from the forward output y), sets dw, db
  // (or adds to them: `accumulate`, the later micro-batches of a step) and, when dx is not
  // null, dL/dx[rows x in]: dw^T = x^T dy, dx^T = W^T dy^T.
  void backward(const float* x, const float* y, float* dy, int rows, float* dx, bool accumulate) {
    const size_t n = size_t(rows) * size_t(out);
    if (relu) kernels::launch<kernels::relu_backward<float>>(kernels::blocks(n), kernels::threads, 0, s_, dy, y, n);
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, &one, x, in, dy, out,
                             accumulate ? &one : &zero, dw_.get(), in),
                 "weight gradient sgemm");
    kernels::launch<kernels::bias_grad<float>>(kernels::blocks(size_t(out)), kernels::threads, 0, s_, dy, db_.get(), rows,
                                              out, accumulate);
    if (dx)
      check_cublas(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, &one, w_.get(), in, dy, out,
                               &zero, dx, in),
                   "input gradient sgemm");
    check_cuda(cudaGetLastError(), "backward kernels");
  }

  void sgd(float lr, float momentum) {
    kernels::launch<kernels::sgd<float>>(kernels::blocks(w_.size()), kernels::threads, 0, s_, w_.get(), vw_.get(),
                                         dw_.get(), w_.size(), lr, momentum);
    kernels::launch<kernels::sgd<float>>(kernels::blocks(b_.size()), kernels::threads, 0, s_, b_.get(), vb_.get(),
                                         db_.get(), b_.size(), lr, momentum);
    check_cuda(cudaGetLastError(), "sgd kernel");
  }

 private:
  cudaStream_t s_;
  cublas_handle blas_;
  device_array<float> w_, dw_, vw_, b_, db_, vb_;  // weights out x in, their gradients and momenta
};

// The loss of the last stage on the device: labels in, per-row losses and hits back to the
// host, where they are summed (rows are few: no device reduction needed).
class softmax_xent_cuda {
 public:
  explicit softmax_xent_cuda(int batch)
      : labels_(size_t(batch)), loss_(size_t(batch)), hit_(size_t(batch)), h_loss_(size_t(batch)),
        h_hit_(size_t(batch)) {}

  // Summed loss of logits[rows x classes] (device); adds the correct predictions to `correct`
  // and writes dL/dlogits (of the loss summed and divided by `norm`) into grad (device) when
  // it is not null. Synchronizes `s`.
  double operator()(const float* logits, const uint8_t* labels, int rows, int classes, float* grad, int& correct,
                    int norm, cudaStream_t s) {
    check_cuda(cudaMemcpyAsync(labels_.get(), labels, size_t(rows), cudaMemcpyHostToDevice, s), "copy labels");
    kernels::launch<kernels::softmax_xent<float>>(kernels::blocks(size_t(rows)), kernels::threads, 0, s, logits,
                                                  labels_.get(), rows, classes, grad, loss_.get(), hit_.get(), norm);
    check_cuda(cudaGetLastError(), "loss kernel");
    check_cuda(cudaMemcpyAsync(h_loss_.data(), loss_.get(), size_t(rows) * sizeof(double), cudaMemcpyDeviceToHost, s),
               "copy losses");
    check_cuda(cudaMemcpyAsync(h_hit_.data(), hit_.get(), size_t(rows) * sizeof(int), cudaMemcpyDeviceToHost, s),
               "copy hits");
    check_cuda(cudaStreamSynchronize(s), "loss");
    double sum = 0;
    for (int r = 0; r < rows; ++r) {
      sum += h_loss_[size_t(r)];
      correct += h_hit_[size_t(r)];
    }
    return sum;
  }

 private:
  device_array<uint8_t> labels_;
  device_array<double> loss_;
  device_array<int> hit_;
  std::vector<double> h_loss_;
  std::vector<int> h_hit_;
};

}  // namespace train
