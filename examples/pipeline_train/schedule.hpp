// Pipeline schedules: the order in which one stage runs the forward (F) and backward (B)
// passes of the M micro-batches of a training step. Every stage runs its own list; the
// micro-batches of a step share one optimizer step at its end (a "flush" schedule).
//   gpipe: all forwards, then all backwards (GPipe).
//   1f1b:  stage s of S runs min(S - 1 - s, M) forwards ahead, then alternates one forward
//          and one backward, then drains the backwards (PipeDream-Flush). It keeps at most
//          S - s micro-batches' activations alive instead of M.
// Both run the micro-batches' forwards and backwards in ascending order on every stage, so
// the messages of one boundary and direction are sent and received in the same order
// (micro-batch 0 first) under either schedule: an endpoint's call sequence, and so its state
// and payload bytes, do not depend on the schedule or on how the stages interleave.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace train {

enum class schedule_kind { gpipe, one_f_one_b };

inline const char* to_string(schedule_kind k) { return k == schedule_kind::gpipe ? "gpipe" : "1f1b"; }

inline bool parse_schedule(const std::string& s, schedule_kind& k) {
  if (s == "gpipe") k = schedule_kind::gpipe;
  else if (s == "1f1b") k = schedule_kind::one_f_one_b;
  else return false;
  return true;
}

struct action {
  bool forward;
  int micro;  // micro-batch index in the step, 0 .. M-1
};

// The actions of stage s (of `stages`) for one training step of m micro-batches.
inline std::vector<action> training_actions(schedule_kind k, int s, int stages, int m) {
  std::vector<action> a;
  const int ahead = k == schedule_kind::gpipe ? m : std::min(stages - 1 - s, m);
  int f = 0, b = 0;
  while (f < ahead) a.push_back({true, f++});
  while (f < m) {
    a.push_back({true, f++});
    a.push_back({false, b++});
  }
  while (b < m) a.push_back({false, b++});
  return a;
}

// Inference: forwards only, in order.
inline std::vector<action> inference_actions(int m) {
  std::vector<action> a;
  for (int i = 0; i < m; ++i) a.push_back({true, i});
  return a;
}

}  // namespace train
