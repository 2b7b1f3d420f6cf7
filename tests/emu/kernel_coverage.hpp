// The gpu suite's kernel coverage check, emulated builds only (tests/gpu/main.cu). With
// PIPECODEC_EMU_UNLAUNCHED naming the list of kernel instantiations that no test launches
// (tests/emu/unlaunched_kernels.txt), a whole-suite run fails when any other instantiation
// the program contains was never launched, and when a listed one was launched or is gone: the
// list only shrinks, as tests reach its kernels. PIPECODEC_EMU_UNLAUNCHED_UPDATE=1 rewrites it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "pipecodec_emu/launch.hpp"

namespace testemu {

inline int check_kernel_coverage(const char* list_path) {
  std::set<std::string> listed, unlaunched;
  std::ifstream in(list_path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') listed.insert(line);
  size_t total = 0;
  for (const auto& [name, launches] : pipecodec_emu::kernel_launches()) {
    ++total;
    if (launches == 0) unlaunched.insert(name);
  }
  const char* update = std::getenv("PIPECODEC_EMU_UNLAUNCHED_UPDATE");
  if (update != nullptr && update[0] == '1') {
    std::ofstream out(list_path);
    out << "# Kernel instantiations no test of the gpu suite launches (tests/emu/kernel_coverage.hpp).\n";
    for (const std::string& name : unlaunched) out << name << '\n';
    std::printf("kernel coverage: wrote %zu unlaunched of %zu to %s\n", unlaunched.size(), total, list_path);
    return out ? 0 : 1;
  }
  int failed = 0;
  for (const std::string& name : unlaunched)
    if (!listed.count(name)) std::printf("kernel coverage: FAIL: no test launches %s\n", name.c_str()), ++failed;
  for (const std::string& name : listed)
    if (!unlaunched.count(name))
      std::printf("kernel coverage: FAIL: %s is listed as unlaunched but ran or no longer exists\n", name.c_str()), ++failed;
  std::printf("kernel coverage: %zu kernel instantiations, %zu launched, %zu listed as never launched\n", total,
              total - unlaunched.size(), listed.size());
  return failed == 0 ? 0 : 1;
}

}  // namespace testemu
