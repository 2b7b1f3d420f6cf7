// MPI point-to-point goodput between two ranks, for tools/links-smoke: rank FROM sends BYTES in
// CHUNK-sized MPI_Sends to rank TO, which answers with one byte once the last chunk is in. FROM
// times from its first send to that answer, so the time includes delivery of every byte (a sender
// alone would stop its clock once the last chunk sits in socket buffers) plus one small message
// back, well under a millisecond on an idle reverse link. A one-byte round trip before the clock
// starts opens the TCP connections, so their setup is not timed.
// With --both, TO sends as much back at the same time (MPI_Sendrecv of each chunk), both
// directions of the link loaded as in a pipeline's steady state; the figures are per direction.
//   link_probe [--bytes N] [--chunk N] [--from RANK] [--to RANK] [--both] [--repeat N] [--gap-ms MS]
// Prints one line per transfer (--repeat, 1 by default) on FROM's stdout:
// PROBE,<bytes>,<seconds>,<payload Mbit/s> (10^6 bit/s). Before each transfer, FROM waits
// --gap-ms (0 by default): a link idle for a while has a full token bucket (tools/links).
// Other ranks take no part; with more than two ranks, a --to that is not a neighbour of --from
// exercises the routes through the stages between them.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct options {
  unsigned long long bytes = 8ULL << 20;
  unsigned long long chunk = 1ULL << 20;
  unsigned long long from = 0;
  unsigned long long to = 1;
  unsigned long long repeat = 1;
  unsigned long long gap_ms = 0;
  bool both = false;
};

bool parse(int argc, char** argv, unsigned long long ranks, options& o) {
  for (int i = 1; i < argc; ++i) {
    const char* name = argv[i];
    if (std::strcmp(name, "--both") == 0) {
      o.both = true;
      continue;
    }
    if (++i == argc || *argv[i] < '0' || *argv[i] > '9') return false;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[i], &end, 10);
    if (*end != '\0') return false;
    if (std::strcmp(name, "--bytes") == 0) {
      o.bytes = v;
    } else if (std::strcmp(name, "--chunk") == 0) {
      o.chunk = v;
    } else if (std::strcmp(name, "--from") == 0) {
      o.from = v;
    } else if (std::strcmp(name, "--to") == 0) {
      o.to = v;
    } else if (std::strcmp(name, "--repeat") == 0) {
      o.repeat = v;
    } else if (std::strcmp(name, "--gap-ms") == 0) {
      o.gap_ms = v;
    } else {
      return false;
    }
  }
  // MPI counts are ints, hence the cap on a chunk.
  return o.bytes > 0 && o.chunk > 0 && o.chunk <= (1ULL << 30) && o.from != o.to && o.from < ranks &&
         o.to < ranks && o.repeat > 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options o;
  if (!parse(argc, argv, static_cast<unsigned long long>(size), o)) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: link_probe [--bytes N] [--chunk N (<= 2^30)] [--from RANK] [--to RANK] "
                   "[--both] [--repeat N] [--gap-ms MS] (two distinct ranks of %d)\n",
                   size);
    }
    MPI_Finalize();
    return 2;
  }
  const int from = static_cast<int>(o.from), to = static_cast<int>(o.to);
  std::vector<char> buf(o.chunk, 'p'), back(o.both ? o.chunk : 0, 'q');
  // One chunk of N bytes to PEER, and with --both one from it.
  const auto exchange = [&](int peer, unsigned long long n, bool sending) {
    const int count = static_cast<int>(n);
    if (o.both) {
      MPI_Sendrecv(buf.data(), count, MPI_CHAR, peer, 1, back.data(), count, MPI_CHAR, peer, 1, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    } else if (sending) {
      MPI_Send(buf.data(), count, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
    } else {
      MPI_Recv(buf.data(), count, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  };
  char token = 0;
  if (rank == from) {
    MPI_Send(&token, 1, MPI_CHAR, to, 0, MPI_COMM_WORLD);
    MPI_Recv(&token, 1, MPI_CHAR, to, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (unsigned long long r = 0; r < o.repeat; ++r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.gap_ms));
      const double t0 = MPI_Wtime();
      for (unsigned long long sent = 0; sent < o.bytes; sent += o.chunk) {
        exchange(to, o.bytes - sent < o.chunk ? o.bytes - sent : o.chunk, true);
      }
      MPI_Recv(&token, 1, MPI_CHAR, to, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const double seconds = MPI_Wtime() - t0;
      std::printf("PROBE,%llu,%.6f,%.3f\n", o.bytes, seconds, static_cast<double>(o.bytes) * 8.0 / seconds / 1e6);
      std::fflush(stdout);
    }
  } else if (rank == to) {
    MPI_Recv(&token, 1, MPI_CHAR, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&token, 1, MPI_CHAR, from, 0, MPI_COMM_WORLD);
    for (unsigned long long r = 0; r < o.repeat; ++r) {
      for (unsigned long long got = 0; got < o.bytes; got += o.chunk) {
        exchange(from, o.bytes - got < o.chunk ? o.bytes - got : o.chunk, false);
      }
      MPI_Send(&token, 1, MPI_CHAR, from, 2, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
