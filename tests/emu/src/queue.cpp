// Streams and their ordering rules: each stream runs its work in order; the legacy default
// stream waits for all earlier work of the blocking streams and they wait for its earlier
// work; cudaStreamNonBlocking streams are ordered with nothing but their own work and events.
// Captured streams record graphs instead of queueing work.
#include "queue.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

namespace pipecodec_emu::detail {

namespace {

struct registry {
  stream legacy;
  std::set<stream*> live;              // created and not destroyed
  std::vector<stream*> blocking;       // blocking streams, destroyed ones until their work has run
  std::vector<stream*> all;            // every stream ever created (cudaDeviceSynchronize)
  std::set<event*> events;
  registry() {
    legacy.legacy = true;
    legacy.tsan = san::new_context("legacy default stream");
  }
};

registry& reg() {
  static registry* r = new registry;  // lives to the end: streams and their pending work with it
  return *r;
}

stream*& per_thread_stream() {
  thread_local stream* s = nullptr;
  return s;
}

double now_ms() {
  using clock = std::chrono::steady_clock;
  static const clock::time_point t0 = clock::now();
  return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
}

stream* new_stream(bool nonblocking, const char* label) {
  auto* s = new stream;
  s->nonblocking = nonblocking;
  char name[96];
  std::snprintf(name, sizeof name, "%s stream %p", label, static_cast<void*>(s));
  s->tsan = san::new_context(name);
  registry& r = reg();
  r.live.insert(s);
  r.all.push_back(s);
  if (!nonblocking) r.blocking.push_back(s);
  return s;
}

void run_steps(operation& o) {
  for (step& st : o.steps) {
    if (st.kernel) {
      san::release(&o.start);
      run_grid(*st.kernel, &o.start, &o.threads_done);
      san::acquire(&o.threads_done);
    } else {
      st.body();
    }
  }
}

// Runs one operation whose dependencies have run, in its stream's TSan context.
void execute(operation& o) {
  void* host = san::current_context();
  san::switch_context(o.owner->tsan);
  san::acquire(&o.enqueued);
  for (const op_ptr& d : o.deps) san::acquire(&d->finished);
  run_steps(o);
  o.deps.clear();  // in the stream's context, which happens after everything they did
  san::release(&o.finished);
  san::switch_context(host);
  o.finished_ms = now_ms();
  o.done = true;
}

void force(const op_ptr& target) {
  std::vector<operation*> todo{target.get()};
  while (!todo.empty()) {
    operation* o = todo.back();
    if (o->done) {
      todo.pop_back();
      continue;
    }
    auto pending = std::find_if(o->deps.begin(), o->deps.end(), [](const op_ptr& d) { return !d->done; });
    if (pending != o->deps.end()) {
      todo.push_back(pending->get());
      continue;
    }
    execute(*o);
    todo.pop_back();
  }
}

}  // namespace

std::recursive_mutex& api_lock() {
  static std::recursive_mutex m;
  return m;
}

stream* resolve(cudaStream_t s) {
  registry& r = reg();
  if (s == nullptr || s == cudaStreamLegacy) return &r.legacy;
  if (s == cudaStreamPerThread) {
    stream*& p = per_thread_stream();
    if (p == nullptr) p = new_stream(false, "per-thread default");
    return p;
  }
  return r.live.count(s) ? s : nullptr;
}

cudaError_t check_not_capturing() {
  for (stream* s : reg().all)
    if (s->capture && !s->capture_invalid && s->capture_mode != cudaStreamCaptureModeRelaxed &&
        (s->capture_mode == cudaStreamCaptureModeGlobal || s->capture_thread == std::this_thread::get_id())) {
      s->capture_invalid = true;
      return fail(cudaErrorStreamCaptureUnsupported);
    }
  return cudaSuccess;
}

cudaError_t enqueue(stream* s, std::vector<step> steps, op_ptr* out, op_ptr extra_dep) {
  registry& r = reg();
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    if (s->capture_invalid) return fail(cudaErrorStreamCaptureInvalidated);
    for (step& st : steps) s->capture->steps.push_back(std::move(st));
    return cudaSuccess;
  }
  if (s->legacy)
    for (stream* b : r.blocking)
      if (b->capture) {  // the legacy stream would wait for a capturing stream
        b->capture_invalid = true;
        return fail(cudaErrorStreamCaptureImplicit);
      }
  // Its kernels' parameters are freed with it, by whichever context drops it last: not an
  // access of the program's.
  op_ptr o(new operation, [](operation* p) {
    san::ignore_begin();
    delete p;
    san::ignore_end();
  });
  o->steps = std::move(steps);
  o->owner = s;
  if (s->last) o->deps.push_back(s->last);
  if (extra_dep) o->deps.push_back(std::move(extra_dep));
  if (s->legacy) {
    for (stream* b : r.blocking)
      if (b->last && !b->last->done) o->deps.push_back(b->last);
  } else if (!s->nonblocking && r.legacy.last && !r.legacy.last->done) {
    o->deps.push_back(r.legacy.last);
  }
  san::release(&o->enqueued);  // the host's earlier writes happen before the operation
  s->last = o;
  if (out) *out = std::move(o);
  // Destroyed blocking streams stop taking part once their work has run.
  r.blocking.erase(std::remove_if(r.blocking.begin(), r.blocking.end(),
                                  [](stream* b) { return b->destroyed && (!b->last || b->last->done); }),
                   r.blocking.end());
  return cudaSuccess;
}

cudaError_t enqueue(stream* s, std::string what, std::function<void()> body, op_ptr* out) {
  std::vector<step> steps(1);
  steps[0].what = std::move(what);
  steps[0].body = std::move(body);
  return enqueue(s, std::move(steps), out);
}

void wait_for(const op_ptr& o) {
  if (!o) return;
  force(o);
  san::acquire(&o->finished);
}

void wait_all() {
  for (stream* s : reg().all) wait_for(s->last);
  wait_for(reg().legacy.last);
}

void submit(cudaStream_t handle, kernel_launch&& k) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  const cudaError_t e = validate_launch(k);
  if (e != cudaSuccess) {
    (void)fail(e);
    return;
  }
  std::vector<step> steps(1);
  steps[0].what = k.name;
  steps[0].kernel = std::make_shared<const kernel_launch>(std::move(k));
  (void)enqueue(s, std::move(steps));
}

}  // namespace pipecodec_emu::detail

using namespace pipecodec_emu::detail;

cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (s == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return fail(cudaErrorInvalidValue);
  *s = new_stream((flags & cudaStreamNonBlocking) != 0, (flags & cudaStreamNonBlocking) ? "non-blocking" : "blocking");
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr || s->legacy || handle == cudaStreamPerThread) return fail(cudaErrorInvalidResourceHandle);
  // Work already queued still runs when something waits for it, as on a GPU.
  s->destroyed = true;
  reg().live.erase(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    s->capture_invalid = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (const cudaError_t e = check_not_capturing(); e != cudaSuccess) return e;
  wait_for(s->last);
  return cudaSuccess;
}

// Polling waits too: the emulated device makes progress only when waited for.
cudaError_t cudaStreamQuery(cudaStream_t handle) { return cudaStreamSynchronize(handle); }

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t e, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr || !reg().events.count(e)) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) return fail(cudaErrorStreamCaptureUnsupported);  // cross-stream capture is not emulated
  std::vector<step> steps(1);
  steps[0].what = "wait for an event";
  steps[0].body = [] {};
  return enqueue(s, std::move(steps), nullptr, e->marker);
}

cudaError_t cudaDeviceSynchronize() {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (const cudaError_t e = check_not_capturing(); e != cudaSuccess) return e;
  wait_all();
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (e == nullptr) return fail(cudaErrorInvalidValue);
  *e = new event;
  (*e)->timing = (flags & cudaEventDisableTiming) == 0;
  reg().events.insert(*e);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (!reg().events.erase(e)) return fail(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t handle) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr || !reg().events.count(e)) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) return fail(cudaErrorStreamCaptureUnsupported);  // event nodes are not emulated
  return enqueue(s, "event record", [] {}, &e->marker);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (!reg().events.count(e)) return fail(cudaErrorInvalidResourceHandle);
  if (const cudaError_t c = check_not_capturing(); c != cudaSuccess) return c;
  wait_for(e->marker);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (ms == nullptr) return fail(cudaErrorInvalidValue);
  if (!reg().events.count(start) || !reg().events.count(stop) || !start->timing || !stop->timing)
    return fail(cudaErrorInvalidResourceHandle);
  if (!start->marker || !stop->marker || !start->marker->done || !stop->marker->done)
    return fail(cudaErrorNotReady);
  *ms = float(stop->marker->finished_ms - start->marker->finished_ms);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode mode) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->legacy || s->capture) return fail(cudaErrorStreamCaptureUnsupported);
  s->capture = std::make_unique<graph>();
  s->capture_mode = mode;
  s->capture_thread = std::this_thread::get_id();
  s->capture_invalid = false;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* g) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr || g == nullptr) return fail(cudaErrorInvalidValue);
  if (!s->capture) return fail(cudaErrorInvalidValue);
  *g = nullptr;
  std::unique_ptr<graph> captured = std::move(s->capture);
  if (s->capture_invalid) return fail(cudaErrorStreamCaptureInvalidated);
  *g = captured.release();
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(handle);
  if (s == nullptr || status == nullptr) return fail(cudaErrorInvalidValue);
  *status = !s->capture ? cudaStreamCaptureStatusNone
            : s->capture_invalid ? cudaStreamCaptureStatusInvalidated
                                 : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  if (exec == nullptr || g == nullptr) return fail(cudaErrorInvalidValue);
  *exec = new graph(*g);
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t handle) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  return enqueue(resolve(handle), exec->steps);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}

cudaError_t pipecodec_emu::enqueue_host_work(cudaStream_t handle, const char* what, std::function<void()> work) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  return enqueue(resolve(handle), what, std::move(work));
}
