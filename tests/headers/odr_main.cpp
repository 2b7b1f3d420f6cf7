// Links two translation units that both include pipecodec.hpp and run encode/decode: a
// non-inline definition in a header fails the link, and both must compute the same bytes.
#include <cstdio>

#include "odr_common.hpp"

int main() {
  const char* specs[] = {"quant:bits=3,group=32,round=stochastic", "quant:bits=8,group=row,scale=absmax",
                         "plain:dtype=bf16"};
  int failed = 0;
  for (const char* s : specs) {
    const auto a = odr_a(s), b = odr_b(s);
    const bool good = !a.empty() && a == b;
    std::printf("%s %s\n", good ? "ok  " : "FAIL", s);
    failed += !good;
  }
  return failed;
}
