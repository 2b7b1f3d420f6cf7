// The training data: Fashion-MNIST through the shared loader (examples/common), pixels
// standardised with the training set's mean and standard deviation (0.2860, 0.3530).
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "../common/fashion_mnist.hpp"

namespace train {

struct dataset {
  std::vector<float> images;    // n x 784, row-major
  std::vector<uint8_t> labels;  // n, 0..9
  size_t n = 0;
  static constexpr size_t features = 784;
};

// Loads split `prefix` ("train" or "t10k") from `dir`, keeping the first `limit` samples
// (0: all). False with `error` set when a file is missing or malformed.
inline bool load_fashion_mnist(const std::string& dir, const std::string& prefix, size_t limit,
                               dataset& d, std::string& error) {
  const bool train = prefix == "train";
  const uint64_t max_count = limit ? limit : UINT64_MAX;
  try {
    fashion_mnist::images im = fashion_mnist::load_images(fashion_mnist::images_file(dir, train), max_count);
    d.labels = fashion_mnist::load_labels(fashion_mnist::labels_file(dir, train), max_count);
    if (im.rows * im.cols != dataset::features || d.labels.size() != im.count) {
      error = "unexpected image size or label count in " + dir + "/" + prefix;
      return false;
    }
    d.n = size_t(im.count);
    d.images = std::move(im.pixels);
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
  for (float& x : d.images) x = (x - 0.2860F) / 0.3530F;
  return true;
}

}  // namespace train
