// How payload bytes travel between stages. In-process: a mailbox per (stage, tag), so the
// bytes still go encode -> buffer -> decode exactly as over a network. transport_mpi.hpp
// sends them between ranks (one rank per stage).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace train {

enum tag : int { tag_fwd = 1, tag_bwd = 2 };

class transport {
 public:
  virtual ~transport() = default;
  virtual int stages() const = 0;
  // Whether this process runs stage s.
  virtual bool runs(int s) const = 0;
  virtual void send(int to, int tag, const uint8_t* data, size_t n) = 0;
  // Receives the next message from stage `from` with `tag` into buf (cap bytes); returns its size.
  virtual size_t recv(int from, int tag, uint8_t* buf, size_t cap) = 0;
  // Element-wise sum of vals over all processes, the result on every process.
  virtual void sum(double* vals, int n) = 0;
};

class inprocess_transport final : public transport {
 public:
  explicit inprocess_transport(int stages) : stages_(stages) {}
  int stages() const override { return stages_; }
  bool runs(int) const override { return true; }
  // Stages run one after the other (forward in order, backward in reverse), so each message
  // is received before the next one with the same tag is sent: one mailbox per tag suffices.
  void send(int, int tag, const uint8_t* data, size_t n) override { box_[tag].assign(data, data + n); }
  size_t recv(int, int tag, uint8_t* buf, size_t cap) override {
    const std::vector<uint8_t>& m = box_[tag];
    const size_t n = m.size() < cap ? m.size() : cap;
    std::memcpy(buf, m.data(), n);
    return n;
  }
  void sum(double*, int) override {}

 private:
  int stages_;
  std::map<int, std::vector<uint8_t>> box_;
};

}  // namespace train
