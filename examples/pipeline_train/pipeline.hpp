// The pipeline driver: runs the stages this process holds (all of them in-process, one per
// MPI rank) through a step of micro-batches in the order a schedule gives (schedule.hpp),
// moving each payload as a message (framing.hpp) through the transport. A send does not
// wait for its message to leave, and the receives of a whole step are posted before it
// starts: a stage computes the next micro-batch while the previous one is on the wire, and
// decodes one payload while the next arrives. In-process, the stages take turns: each runs
// its actions until one needs a message not sent yet.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fashion_mnist.hpp"
#include "framing.hpp"
#include "schedule.hpp"
#include "transport.hpp"

namespace train {

namespace pc = pipecodec;

// How a step is cut and run.
struct pipeline_shape {
  int stages = 4, hidden = 1024, batch = 100, micro = 1;  // micro: micro-batches per training step
  schedule_kind kind = schedule_kind::gpipe;
  float lr = 0.02f, momentum = 0.9f;
  uint64_t cosine_steps = 0;  // learning rate lr * (1 + cos(pi * step / cosine_steps)) / 2; 0: constant lr
  float lr_at(uint64_t step) const {
    if (cosine_steps == 0) return lr;
    const double t = double(std::min(step, cosine_steps)) / double(cosine_steps);
    return float(0.5 * double(lr) * (1 + std::cos(3.14159265358979323846 * t)));
  }
  int micro_rows() const { return batch / micro; }
};

// Bytes one stage sent over its boundaries: payloads (what pipecodec made) and framing.
struct sent_bytes {
  double payload[2] = {}, framing[2] = {}, messages[2] = {};  // [direction]: 0 fwd, 1 bwd
};

// 64-bit FNV-1a of a payload, for --payload-log.
inline unsigned long long fnv1a(const uint8_t* p, size_t n) {
  unsigned long long h = 14695981039346656037ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

template <class Stage>
class pipeline {
 public:
  // `log`: where to write one line per payload sent (null: nowhere).
  pipeline(transport& t, const pipeline_shape& ps, const pc::policy& pol, uint64_t samples, uint64_t seed,
           std::FILE* log)
      : t_(t), ps_(ps), log_(log) {
    auto width = [&](int b) { return b == 0 ? int(dataset::features) : b == ps.stages ? 10 : ps.hidden; };
    const int rows = ps.micro_rows(), slots = ps.micro;
    for (int s = 0; s < ps.stages; ++s) {
      if (!t.runs(s)) continue;
      local l;
      l.s = s;
      l.stage.reset(new Stage(s, ps.stages, width(s), width(s + 1), rows, slots, pol, samples, seed));
      const auto& e = l.stage->endpoints();
      const size_t ids = framing_bytes(uint32_t(rows), true), plain = framing_bytes(0, false);
      l.slots.resize(size_t(slots));
      for (micro_batch& b : l.slots) {
        if (s == 0) b.input.resize(size_t(rows) * dataset::features);
        b.ids.resize(size_t(rows));
        b.labels.resize(size_t(rows));
        b.fwd_in.resize(e.fwd_in_bytes() + ids);
        b.fwd_out.resize(e.fwd_out_bytes() + ids);
        b.bwd_in.resize(e.bwd_in_bytes() + plain);
        b.bwd_out.resize(e.bwd_out_bytes() + plain);
      }
      locals_.push_back(std::move(l));
    }
  }

  // Runs the step `at` over `rows` rows with sample ids `ids` (read on stage 0): when
  // at.training, every micro-batch forward and backward and one optimizer step; otherwise
  // forwards. Returns the summed loss and adds the correct predictions to `correct` (both
  // only where the last stage runs). Training steps have exactly ps.batch rows.
  double run(const dataset& d, const uint64_t* ids, int rows, const pc::step_info& at, int& correct) {
    const int per = ps_.micro_rows();
    const int m = at.training ? ps_.micro : (rows + per - 1) / per;
    const uint64_t id = at.training ? at.step : ~uint64_t(0) - inference_batches_++;
    step_ = {&d, ids, rows, at, id, 0.0, &correct};
    for (local& l : locals_) post_receives(l, m, at.training);
    // Which action of each local stage runs next.
    std::vector<std::vector<action>> todo;
    for (const local& l : locals_)
      todo.push_back(at.training ? training_actions(ps_.kind, l.s, ps_.stages, m) : inference_actions(m));
    std::vector<size_t> next(locals_.size(), 0);
    for (bool busy = true; busy;) {
      busy = false;
      bool moved = false;
      for (size_t i = 0; i < locals_.size(); ++i) {
        for (; next[i] < todo[i].size() && try_run(locals_[i], todo[i][next[i]]); ++next[i]) moved = true;
        busy = busy || next[i] < todo[i].size();
      }
      if (busy && !moved) {
        std::fprintf(stderr, "pipeline_train: the schedule waits for a message nobody sends\n");
        std::exit(3);
      }
    }
    t_.wait_sends();
    if (at.training)
      for (local& l : locals_) l.stage->sgd(ps_.lr_at(at.step), ps_.momentum);
    return step_.loss;
  }

  void set_inference(pc::inference_mode mode) {
    for (local& l : locals_) l.stage->set_inference(mode);
  }
  template <class F>  // f(const Stage&, int s)
  void for_each_stage(F&& f) const {
    for (const local& l : locals_) f(*l.stage, l.s);
  }
  // Bytes each local stage sent, by stage.
  template <class F>  // f(int s, const sent_bytes&)
  void for_each_sent(F&& f) const {
    for (const local& l : locals_) f(l.s, l.sent);
  }

 private:
  struct micro_batch {  // one micro-batch of a step on one stage, in its slot
    std::vector<float> input;  // stage 0: the rows' pixels
    std::vector<uint64_t> ids;
    std::vector<uint8_t> labels;
    std::vector<uint8_t> fwd_in, fwd_out, bwd_in, bwd_out;  // messages
    size_t fwd_in_len = 0;                                  // the received payload's length
  };
  struct local {
    int s = 0;
    std::unique_ptr<Stage> stage;
    std::vector<micro_batch> slots;
    sent_bytes sent;
  };
  struct current_step {
    const dataset* d;
    const uint64_t* ids;
    int rows;
    pc::step_info at;
    uint64_t id;  // the frames' step field
    double loss;
    int* correct;
  };

  int rows_of(int m) const { return std::min(ps_.micro_rows(), step_.rows - m * ps_.micro_rows()); }
  frame frame_of(int m) const { return frame{step_.id, uint32_t(m), uint32_t(rows_of(m))}; }
  bool last(const local& l) const { return l.s == ps_.stages - 1; }

  void post_receives(local& l, int m, bool training) {
    for (int i = 0; i < m; ++i) {
      micro_batch& b = l.slots[size_t(i)];
      if (l.s > 0) t_.post_recv(l.s - 1, l.s, tag_fwd, b.fwd_in.data(), b.fwd_in.size());
      if (training && !last(l)) t_.post_recv(l.s + 1, l.s, tag_bwd, b.bwd_in.data(), b.bwd_in.size());
    }
  }

  // Runs `a` on stage l if its message is there (or, over MPI, once it is); returns whether it ran.
  bool try_run(local& l, const action& a) {
    const bool block = t_.can_block();
    size_t n = 0;
    if (a.forward && l.s > 0 && !t_.complete_recv(l.s - 1, l.s, tag_fwd, block, n)) return false;
    if (!a.forward && !last(l) && !t_.complete_recv(l.s + 1, l.s, tag_bwd, block, n)) return false;
    if (a.forward) forward(l, a.micro, n);
    else backward(l, a.micro, n);
    return true;
  }

  pc::step_info step_info_of(const micro_batch& b, int m) const {
    pc::step_info at = step_.at;
    at.sample_ids = b.ids.data();
    if (at.training) at.seed = at.step * uint64_t(ps_.micro) + uint64_t(m);  // M = 1: the step
    return at;
  }

  void forward(local& l, int m, size_t n) {
    micro_batch& b = l.slots[size_t(m)];
    const int rows = rows_of(m);
    if (l.s == 0) {
      const dataset& d = *step_.d;
      std::memcpy(b.ids.data(), step_.ids + size_t(m) * size_t(ps_.micro_rows()), size_t(rows) * 8);
      for (int r = 0; r < rows; ++r)
        std::memcpy(&b.input[size_t(r) * dataset::features], &d.images[b.ids[size_t(r)] * dataset::features],
                    dataset::features * sizeof(float));
    } else {
      b.fwd_in_len = unseal(b.fwd_in.data(), n, frame_of(m), b.ids.data());
    }
    const size_t len = l.stage->forward(m, b.input.data(), b.fwd_in.data(), b.fwd_in_len, rows, step_info_of(b, m),
                                        b.fwd_out.data(), b.fwd_out.size());
    if (last(l)) {
      for (int r = 0; r < rows; ++r) b.labels[size_t(r)] = step_.d->labels[b.ids[size_t(r)]];
      step_.loss += l.stage->loss(m, b.labels.data(), rows, step_.at.training, *step_.correct, step_.rows);
      return;
    }
    send(l, 0, l.s + 1, b.fwd_out.data(), len, m, b.ids.data());
  }

  void backward(local& l, int m, size_t n) {
    micro_batch& b = l.slots[size_t(m)];
    const size_t in = last(l) ? 0 : unseal(b.bwd_in.data(), n, frame_of(m), nullptr);
    const size_t len = l.stage->backward(m, b.bwd_in.data(), in, rows_of(m), step_info_of(b, m), b.bwd_out.data(),
                                         b.bwd_out.size());
    if (l.s > 0) send(l, 1, l.s - 1, b.bwd_out.data(), len, m, nullptr);
  }

  // Seals the payload of `len` bytes at msg and sends it in direction dir (0 fwd, 1 bwd).
  void send(local& l, int dir, int to, uint8_t* msg, size_t len, int m, const uint64_t* ids) {
    const size_t n = seal(msg, len, frame_of(m), ids);
    l.sent.payload[dir] += double(len);
    l.sent.framing[dir] += double(n - len);
    l.sent.messages[dir] += 1;
    if (log_)
      std::fprintf(log_, "%s,%llu,%d,%d,%s,%zu,%016llx\n", step_.at.training ? "train" : "infer",
                   (unsigned long long)step_.id, m, dir == 0 ? l.s : to, dir == 0 ? "fwd" : "bwd", len,
                   fnv1a(msg, len));
    t_.post_send(l.s, to, dir == 0 ? tag_fwd : tag_bwd, msg, n);
  }

  transport& t_;
  pipeline_shape ps_;
  std::FILE* log_;
  std::vector<local> locals_;
  current_step step_{};
  uint64_t inference_batches_ = 0;
};

}  // namespace train
