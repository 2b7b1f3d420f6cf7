// Fashion-MNIST from Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*.gz):
// gzip'd idx files read with zlib. Pixels are scaled to [0, 1] and standardised with the
// training set's mean and standard deviation (0.2860, 0.3530).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace train {

struct dataset {
  std::vector<float> images;   // n x 784, row-major
  std::vector<uint8_t> labels; // n, 0..9
  size_t n = 0;
  static constexpr size_t features = 784;
};

namespace detail {

inline bool read_gz(const std::string& path, std::vector<uint8_t>& out, std::string& error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot open " + path;
    return false;
  }
  out.clear();
  uint8_t buf[1 << 16];
  int got = 0;
  while ((got = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + got);
  const bool ok = got == 0;
  gzclose(f);
  if (!ok) error = "cannot decompress " + path;
  return ok;
}

inline uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace detail

// Loads `prefix`-images-idx3-ubyte.gz and `prefix`-labels-idx1-ubyte.gz from `dir`
// (prefix "train" or "t10k"), keeping the first `limit` samples (0: all).
inline bool load_fashion_mnist(const std::string& dir, const std::string& prefix, size_t limit,
                               dataset& d, std::string& error) {
  std::vector<uint8_t> img, lab;
  if (!detail::read_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz", img, error) ||
      !detail::read_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz", lab, error))
    return false;
  if (img.size() < 16 || lab.size() < 8 || detail::be32(img.data()) != 0x803 ||
      detail::be32(lab.data()) != 0x801 || detail::be32(img.data() + 8) != 28 ||
      detail::be32(img.data() + 12) != 28) {
    error = "bad idx header in " + dir + "/" + prefix;
    return false;
  }
  size_t n = detail::be32(img.data() + 4);
  if (detail::be32(lab.data() + 4) != n || img.size() != 16 + n * 784 || lab.size() != 8 + n) {
    error = "idx sizes disagree in " + dir + "/" + prefix;
    return false;
  }
  if (limit && limit < n) n = limit;
  d.n = n;
  d.images.resize(n * 784);
  d.labels.assign(lab.begin() + 8, lab.begin() + 8 + long(n));
  for (size_t i = 0; i < n * 784; ++i) d.images[i] = (float(img[16 + i]) / 255.0f - 0.2860f) / 0.3530f;
  for (uint8_t l : d.labels)
    if (l > 9) {
      error = "label out of range in " + dir + "/" + prefix;
      return false;
    }
  return true;
}

}  // namespace train
