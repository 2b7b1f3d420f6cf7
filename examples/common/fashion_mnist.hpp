// Fashion-MNIST loader (header-only; needs zlib): the gzipped IDX files of Debian's
// dataset-fashion-mnist package, images as float in [0, 1] and labels as 0..9.
// Errors (missing file, bad magic, truncated data) throw std::runtime_error naming the file.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fashion_mnist {

inline const char* default_dir() { return "/usr/share/datasets/fashion-mnist"; }

// File name of a split: train (60000 samples) or t10k (10000).
inline std::string images_file(const std::string& dir, bool train) {
  return dir + (train ? "/train-images-idx3-ubyte.gz" : "/t10k-images-idx3-ubyte.gz");
}
inline std::string labels_file(const std::string& dir, bool train) {
  return dir + (train ? "/train-labels-idx1-ubyte.gz" : "/t10k-labels-idx1-ubyte.gz");
}

struct images {
  uint64_t count = 0, rows = 0, cols = 0;
  std::vector<float> pixels;  // count x (rows * cols), row-major, values k / 255
};

namespace detail {

// Reads a gzipped IDX file: big-endian u32 magic and dimensions, then u8 data.
class idx_reader {
 public:
  explicit idx_reader(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw std::runtime_error("cannot open '" + path + "' (install dataset-fashion-mnist)");
  }
  ~idx_reader() { gzclose(f_); }
  idx_reader(const idx_reader&) = delete;
  idx_reader& operator=(const idx_reader&) = delete;

  void read(void* dst, size_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
      const unsigned chunk = n > (1u << 30) ? (1u << 30) : unsigned(n);
      const int got = gzread(f_, p, chunk);
      if (got <= 0) throw std::runtime_error("'" + path_ + "': truncated or not gzip");
      p += got;
      n -= size_t(got);
    }
  }
  uint32_t u32() {
    uint8_t b[4];
    read(b, 4);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
  }
  void expect_magic(uint32_t magic) {
    if (u32() != magic) throw std::runtime_error("'" + path_ + "': not an IDX file of the expected kind");
  }
 private:
  std::string path_;
  gzFile f_;
};

inline uint64_t take(uint64_t available, uint64_t max_count) {
  return max_count < available ? max_count : available;
}

}  // namespace detail

// The first min(max_count, all) images of a file, pixels scaled to [0, 1].
inline images load_images(const std::string& path, uint64_t max_count = UINT64_MAX) {
  detail::idx_reader r(path);
  r.expect_magic(0x00000803u);
  images im;
  const uint64_t available = r.u32();
  im.rows = r.u32();
  im.cols = r.u32();
  if (im.rows == 0 || im.cols == 0 || im.rows * im.cols > 4096 || available > 10000000)
    throw std::runtime_error("'" + path + "': implausible image count or size");
  im.count = detail::take(available, max_count);
  std::vector<uint8_t> raw(im.count * im.rows * im.cols);
  r.read(raw.data(), raw.size());
  im.pixels.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) im.pixels[i] = float(raw[i]) / 255.0F;
  return im;
}

// The first min(max_count, all) labels of a file (class indices 0..9).
inline std::vector<uint8_t> load_labels(const std::string& path, uint64_t max_count = UINT64_MAX) {
  detail::idx_reader r(path);
  r.expect_magic(0x00000801u);
  std::vector<uint8_t> labels(detail::take(r.u32(), max_count));
  r.read(labels.data(), labels.size());
  for (uint8_t l : labels)
    if (l > 9) throw std::runtime_error("'" + path + "': label out of range");
  return labels;
}

}  // namespace fashion_mnist
