// MPI transport: one rank per stage, messages as MPI_BYTE with MPI_Isend / MPI_Irecv.
// Receives are posted ahead (a step posts all of its own), so a payload lands while the
// stage still computes. MPI moves bytes only while some thread is inside the library:
// launch with a progress thread in the transport (Open MPI over TCP:
// --mca btl_tcp_progress_thread 1, as tools/links does) for sends to proceed while a stage
// computes. Waiting tests the request and sleeps 50 us between tests instead of spinning in
// MPI_Wait: ranks that share cores (4 stages on the 2-core VM) would otherwise spend them on
// polling instead of on the stages that compute.
#pragma once

#include <mpi.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

#include "transport.hpp"

namespace train {

class mpi_transport final : public transport {
 public:
  explicit mpi_transport(int stages) : stages_(stages) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != stages) {
      if (rank_ == 0) std::fprintf(stderr, "pipeline_train: --mpi needs %d ranks, got %d\n", stages, size);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  int stages() const override { return stages_; }
  bool runs(int s) const override { return s == rank_; }
  bool can_block() const override { return true; }
  int rank() const { return rank_; }

  void post_send(int, int to, int tag, const uint8_t* data, size_t n) override {
    sends_.emplace_back();
    MPI_Isend(data, int(n), MPI_BYTE, to, tag, MPI_COMM_WORLD, &sends_.back());
  }
  void post_recv(int from, int, int tag, uint8_t* buf, size_t cap) override {
    recvs_[{from, tag}].emplace_back();
    MPI_Irecv(buf, int(cap), MPI_BYTE, from, tag, MPI_COMM_WORLD, &recvs_[{from, tag}].back());
  }
  bool complete_recv(int from, int, int tag, bool block, size_t& n) override {
    std::deque<MPI_Request>& q = recvs_[{from, tag}];
    if (q.empty()) {
      std::fprintf(stderr, "pipeline_train: rank %d: no receive posted from %d (tag %d)\n", rank_, from, tag);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Status st;
    if (!test(q.front(), st, block)) return false;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    // A message longer than its receive fails the receive (MPI_ERR_TRUNCATE aborts by default).
    n = size_t(count);
    q.pop_front();
    return true;
  }
  void wait_sends() override {
    MPI_Status st;
    for (MPI_Request& r : sends_) test(r, st, true);
    sends_.clear();
  }
  void sum(double* vals, int n) override {
    MPI_Allreduce(MPI_IN_PLACE, vals, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }

 private:
  // Tests r until it completes (block) or once; sleeps between tests.
  static bool test(MPI_Request& r, MPI_Status& st, bool block) {
    for (;;) {
      int done = 0;
      MPI_Test(&r, &done, &st);
      if (done || !block) return done != 0;
      const timespec pause{0, 50000};
      nanosleep(&pause, nullptr);
    }
  }

  int stages_;
  int rank_ = 0;
  std::vector<MPI_Request> sends_;
  std::map<std::tuple<int, int>, std::deque<MPI_Request>> recvs_;  // by (from, tag)
};

}  // namespace train
