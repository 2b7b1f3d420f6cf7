// How messages travel between stages: non-blocking sends and pre-posted receives, so a
// stage computes the next micro-batch while the previous one is on the wire and a payload
// can arrive while the stage decodes the one before it. In-process: a FIFO per (from, to,
// tag), so the bytes still go encode -> buffer -> decode exactly as over a network.
// transport_mpi.hpp sends them between ranks (one rank per stage).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

namespace train {

enum tag : int { tag_fwd = 1, tag_bwd = 2 };

class transport {
 public:
  virtual ~transport() = default;
  virtual int stages() const = 0;
  // Whether this process runs stage s.
  virtual bool runs(int s) const = 0;
  // Whether complete_recv(block = true) can wait for a message another process sends
  // (false in-process: a message not sent yet never comes while the caller waits).
  virtual bool can_block() const = 0;
  // Starts sending n bytes from stage `from` to stage `to`; `data` stays untouched until
  // wait_sends() returns.
  virtual void post_send(int from, int to, int tag, const uint8_t* data, size_t n) = 0;
  // Posts the receive of the next message from `from` to `to` with `tag` into buf (cap
  // bytes). The receives of one (from, to, tag) complete in the order they were posted.
  virtual void post_recv(int from, int to, int tag, uint8_t* buf, size_t cap) = 0;
  // Completes the oldest posted receive of (from, to, tag) and sets n to its size. Returns
  // false, with nothing completed, when its message is not there yet and `block` is false.
  virtual bool complete_recv(int from, int to, int tag, bool block, size_t& n) = 0;
  // Returns when every posted send of this process has left its buffer.
  virtual void wait_sends() = 0;
  // Element-wise sum of vals over all processes, the result on every process.
  virtual void sum(double* vals, int n) = 0;
};

[[noreturn]] inline void transport_fail(const char* what, size_t n, size_t cap) {
  std::fprintf(stderr, "pipeline_train: %s: message of %zu bytes exceeds its buffer of %zu\n", what, n, cap);
  std::exit(3);
}

class inprocess_transport final : public transport {
 public:
  explicit inprocess_transport(int stages) : stages_(stages) {}
  int stages() const override { return stages_; }
  bool runs(int) const override { return true; }
  bool can_block() const override { return false; }
  void post_send(int from, int to, int tag, const uint8_t* data, size_t n) override {
    sent_[{from, to, tag}].emplace_back(data, data + n);
  }
  void post_recv(int from, int to, int tag, uint8_t* buf, size_t cap) override {
    posted_[{from, to, tag}].push_back({buf, cap});
  }
  bool complete_recv(int from, int to, int tag, bool, size_t& n) override {
    std::deque<std::vector<uint8_t>>& q = sent_[{from, to, tag}];
    std::deque<slot>& p = posted_[{from, to, tag}];
    if (q.empty() || p.empty()) return false;
    n = q.front().size();
    if (n > p.front().cap) transport_fail("in-process receive", n, p.front().cap);
    std::memcpy(p.front().buf, q.front().data(), n);
    q.pop_front();
    p.pop_front();
    return true;
  }
  void wait_sends() override {}
  void sum(double*, int) override {}

 private:
  struct slot {
    uint8_t* buf;
    size_t cap;
  };
  using key = std::tuple<int, int, int>;
  int stages_;
  std::map<key, std::deque<std::vector<uint8_t>>> sent_;
  std::map<key, std::deque<slot>> posted_;
};

}  // namespace train
