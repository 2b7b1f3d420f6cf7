// Streams, the work queued on them, events and captured graphs. Work runs only when the host
// waits for it (a synchronize, a blocking copy, an implicit device synchronization): forcing
// an operation runs the operations it depends on first, so work that nothing orders runs in
// whatever order the waits imply, as it may on a GPU.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "internal.hpp"

namespace pipecodec_emu::detail {

// One kernel, or a piece of host-side work (a copy, a memset, an event marker, a reference
// GEMM). A graph launch is one operation of several steps.
struct step {
  std::string what;
  std::function<void()> body;  // empty for a kernel
  std::shared_ptr<const kernel_launch> kernel;
};

struct stream;

struct operation {
  std::vector<step> steps;
  std::vector<std::shared_ptr<operation>> deps;  // run before this; cleared once done
  stream* owner = nullptr;
  bool done = false;
  double finished_ms = 0;  // host time when it ran (events)
  // ThreadSanitizer synchronization objects (their addresses).
  char enqueued = 0, start = 0, threads_done = 0, finished = 0;
};
using op_ptr = std::shared_ptr<operation>;

struct graph {
  std::vector<step> steps;
};

struct stream {
  bool legacy = false, nonblocking = false, destroyed = false;
  op_ptr last;
  void* tsan = nullptr;  // the context its copies and memsets run in
  std::unique_ptr<graph> capture;  // while capturing: where operations go instead
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
  bool capture_invalid = false;
};

struct event {
  op_ptr marker;
  bool timing = true;
};

// Every API call holds this lock (the runtime is entered from one host thread at a time).
std::recursive_mutex& api_lock();

// Records a failed call for cudaGetLastError and returns it.
cudaError_t fail(cudaError_t e);

// nullptr for a handle that is not a live stream.
stream* resolve(cudaStream_t s);

// Queues one operation of the given steps on s (into its graph while it is captured).
cudaError_t enqueue(stream* s, std::vector<step> steps, op_ptr* out = nullptr, op_ptr extra_dep = nullptr);
cudaError_t enqueue(stream* s, std::string what, std::function<void()> body, op_ptr* out = nullptr);

// Runs o and everything it depends on; the calling host thread then happens after it.
void wait_for(const op_ptr& o);
void wait_all();

// A call that waits for the device is illegal while this host thread captures a stream in
// global or thread-local mode: it invalidates the capture and fails.
cudaError_t check_not_capturing();

}  // namespace pipecodec_emu::detail
