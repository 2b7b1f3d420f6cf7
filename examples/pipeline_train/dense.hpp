// One stage's layer: y = x W^T + b (ReLU except on the last stage), its backward pass and an
// SGD-with-momentum step, written out with OpenBLAS cblas_sgemm. Row-major throughout.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "stage_common.hpp"

namespace train {

struct dense {
  int in = 0, out = 0;
  bool relu = true;
  std::vector<float> w, b, dw, db, vw, vb;  // weights out x in, their gradients and momenta

  dense(int in_, int out_, bool relu_, uint64_t seed)
      : in(in_), out(out_), relu(relu_), w(he_init(in_, out_, seed)) {
    b.assign(size_t(out), 0.0f);
    dw = vw = std::vector<float>(w.size(), 0.0f);
    db = vb = std::vector<float>(b.size(), 0.0f);
  }

  // y[rows x out] from x[rows x in].
  void forward(const float* x, int rows, float* y) const {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, w.data(), in,
                0.0f, y, out);
    for (int r = 0; r < rows; ++r) {
      float* yr = y + size_t(r) * out;
      for (int c = 0; c < out; ++c) {
        const float v = yr[c] + b[size_t(c)];
        yr[c] = relu ? std::max(v, 0.0f) : v;
      }
    }
  }

  // Given dL/dy (modified in place by the ReLU mask, from the forward output y), sets dw, db
  // (or adds to them: `accumulate`, the later micro-batches of a step) and, when dx is not
  // null, dL/dx[rows x in].
  void backward(const float* x, const float* y, float* dy, int rows, float* dx, bool accumulate) {
    if (relu)
      for (size_t i = 0; i < size_t(rows) * out; ++i)
        if (y[i] <= 0.0f) dy[i] = 0.0f;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, rows, 1.0f, dy, out, x, in, accumulate ? 1.0f : 0.0f,
                dw.data(), in);
    if (!accumulate) std::fill(db.begin(), db.end(), 0.0f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < out; ++c) db[size_t(c)] += dy[size_t(r) * out + c];
    if (dx)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, in, out, 1.0f, dy, out, w.data(),
                  in, 0.0f, dx, in);
  }

  void sgd(float lr, float momentum) {
    for (size_t i = 0; i < w.size(); ++i) {
      vw[i] = momentum * vw[i] + dw[i];
      w[i] -= lr * vw[i];
    }
    for (size_t i = 0; i < b.size(); ++i) {
      vb[i] = momentum * vb[i] + db[i];
      b[i] -= lr * vb[i];
    }
  }
};

// Softmax cross-entropy over logits[rows x classes]: returns the summed loss, writes
// dL/dlogits of the loss summed and divided by `norm` (the rows of the whole step, of which
// these may be one micro-batch) into grad and counts correct argmax predictions.
inline double softmax_xent(const float* logits, const uint8_t* labels, int rows, int classes,
                           float* grad, int& correct, int norm) {
  double loss = 0;
  for (int r = 0; r < rows; ++r) {
    const float* z = logits + size_t(r) * classes;
    const int best = int(std::max_element(z, z + classes) - z);
    correct += best == labels[r];
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(double(z[c] - z[best]));
    loss += std::log(sum) - double(z[labels[r]] - z[best]);
    if (grad)
      for (int c = 0; c < classes; ++c) {
        const double p = std::exp(double(z[c] - z[best])) / sum;
        grad[size_t(r) * classes + c] = float((p - (c == labels[r] ? 1.0 : 0.0)) / norm);
      }
  }
  return loss;
}

}  // namespace train
