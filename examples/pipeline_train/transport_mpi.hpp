// MPI transport: one rank per stage, payload bytes as MPI_BYTE messages (size from MPI_Probe).
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

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
  int rank() const { return rank_; }
  void send(int to, int tag, const uint8_t* data, size_t n) override {
    MPI_Send(data, int(n), MPI_BYTE, to, tag, MPI_COMM_WORLD);
  }
  size_t recv(int from, int tag, uint8_t* buf, size_t cap) override {
    MPI_Status st;
    MPI_Probe(from, tag, MPI_COMM_WORLD, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (size_t(n) > cap) {
      std::fprintf(stderr, "pipeline_train: message of %d bytes exceeds %zu\n", n, cap);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Recv(buf, n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return size_t(n);
  }
  void sum(double* vals, int n) override {
    MPI_Allreduce(MPI_IN_PLACE, vals, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }

 private:
  int stages_;
  int rank_ = 0;
};

}  // namespace train
