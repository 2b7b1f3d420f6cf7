// The emulator's self-test: every broken kernel must be reported by the detectors this build
// has (the emulator's checks, results that change with the schedule or poison byte, CUDA
// errors, ThreadSanitizer, AddressSanitizer or UBSan), and its correct twin must pass cleanly under
// every schedule. Each variant runs in a child process (a detector may end it).
//   emu_selftest                      all cases; ends with "N passed, N failed, N skipped"
//   emu_selftest --case NAME broken|twin   one run (what the driver starts)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cases.hpp"

extern char** environ;

namespace {

using namespace selftest;

#if defined(__SANITIZE_THREAD__)
constexpr unsigned available = emulator | results | api | tsan;
constexpr const char* build = "ThreadSanitizer";
#elif defined(__SANITIZE_ADDRESS__) && defined(PIPECODEC_EMU_UBSAN)
constexpr unsigned available = emulator | results | api | asan | ubsan;
constexpr const char* build = "AddressSanitizer and UndefinedBehaviorSanitizer";
#elif defined(__SANITIZE_ADDRESS__)
constexpr unsigned available = emulator | results | api | asan;
constexpr const char* build = "AddressSanitizer";
#else
constexpr unsigned available = emulator | results | api;
constexpr const char* build = "plain";
#endif

int child(const char* name, bool broken) {
  for (const test_case& c : cases()) {
    if (std::strcmp(c.name, name) != 0) continue;
    const outcome o = c.run(broken);
    if (!o.api_error.empty()) {
      std::printf("api-error %s\n", o.api_error.c_str());
      return 5;
    }
    std::printf("result %s %016llx\n", o.correct ? "ok" : "wrong", static_cast<unsigned long long>(o.hash));
    return 0;
  }
  std::fprintf(stderr, "emu_selftest: no case %s\n", name);
  return 2;
}

struct run_result {
  int status = -1;  // exit status, or 128 + signal
  std::string output;
};

struct setting {
  const char* schedule;
  const char* poison;
  const char* sms;
};
const setting all_settings[] = {{"forward", "0xA5", "2"}, {"reverse", "0x5A", "3"}, {"shuffle:7", "0x00", "1"}};
// A ThreadSanitizer process takes seconds to start; it needs no third order to see a race.
const std::vector<setting> settings(all_settings, all_settings + ((available & tsan) ? 2 : 3));

run_result spawn(const char* self, const char* name, bool broken, const setting& s) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PIPECODEC_EMU_", 14) != 0) env.emplace_back(*e);
  env.push_back(std::string("PIPECODEC_EMU_SCHEDULE=") + s.schedule);
  env.push_back(std::string("PIPECODEC_EMU_POISON=") + s.poison);
  env.push_back(std::string("PIPECODEC_EMU_SMS=") + s.sms);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string case_flag = "--case", case_name = name, variant = broken ? "broken" : "twin";
  char* argv[] = {const_cast<char*>(self), case_flag.data(), case_name.data(), variant.data(), nullptr};
  int fds[2];
  run_result r;
  if (pipe(fds) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, self, &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) r.output.append(buf, size_t(got));
  close(fds[0]);
  if (err != 0) return r;
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

constexpr int tsan_exit = 66;  // ThreadSanitizer's exit status after reports

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Which detectors reported a broken variant's runs.
unsigned reported(const test_case& c, const std::vector<run_result>& runs) {
  unsigned found = 0;
  std::string first_hash;
  for (const run_result& r : runs) {
    if (r.status == 3 && contains(r.output, "pipecodec-emu: ") && contains(r.output, c.expect)) found |= emulator;
    if (r.status == 5 && contains(r.output, "api-error ") && contains(r.output, c.expect)) found |= api;
    if (contains(r.output, "ThreadSanitizer: data race") && contains(r.output, "block (")) found |= tsan;
    // That build has UndefinedBehaviorSanitizer too, whose bounds check may see it first.
    if ((contains(r.output, "ERROR: AddressSanitizer") && contains(r.output, c.expect)) ||
        contains(r.output, "runtime error: index"))
      found |= asan;
    if (contains(r.output, "runtime error: ") && contains(r.output, c.expect)) found |= ubsan;
    const size_t at = r.output.find("result ");
    if ((r.status == 0 || r.status == tsan_exit) && at != std::string::npos) {
      const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
      if (contains(line, "wrong")) found |= results;
      const std::string h = line.substr(line.rfind(' ') + 1);
      if (!first_hash.empty() && h != first_hash) found |= results;
      if (first_hash.empty()) first_hash = h;
    }
  }
  return found;
}

// A twin passes when every run is correct, identical and free of reports.
bool clean(const std::vector<run_result>& runs, std::string& why) {
  std::string first;
  for (const run_result& r : runs) {
    const size_t at = r.output.find("result ok ");
    if (r.status != 0 || at == std::string::npos || contains(r.output, "Sanitizer") ||
        contains(r.output, "runtime error: ") || contains(r.output, "pipecodec-emu")) {
      why = "exit " + std::to_string(r.status) + ":\n" + r.output;
      return false;
    }
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    if (!first.empty() && line != first) {
      why = "results differ between schedules: " + first + " / " + line;
      return false;
    }
    first = line;
  }
  return true;
}

std::string names(unsigned d) {
  static const char* const label[] = {"emulator", "results", "api", "tsan", "asan", "ubsan"};
  std::string s;
  for (int i = 0; i < 6; ++i)
    if (d & (1u << i)) s += (s.empty() ? "" : ", ") + std::string(label[i]);
  return s.empty() ? "none" : s;
}

int driver(const char* self) {
  std::printf("emu_selftest (%s build): each broken kernel must be reported, each twin must pass\n", build);
  int passed = 0, failed = 0, skipped = 0;
  for (const test_case& c : cases()) {
    // A ThreadSanitizer process takes seconds to start: that build runs only the cases its
    // detector is for; the others' builds run the rest.
    if ((available & tsan) && !(c.detectors & tsan)) {
      std::printf("SKIP %-28s %s: checked in the other builds\n", c.name, c.defect);
      ++skipped;
      continue;
    }
    std::vector<run_result> twin;
    for (const setting& s : settings) twin.push_back(spawn(self, c.name, false, s));
    std::string why;
    const bool twin_ok = clean(twin, why);
    const unsigned need = c.detectors & available;
    if (c.detectors != 0 && need == 0) {
      std::printf("SKIP %-28s %s: needs the %s build\n", c.name, c.defect, names(c.detectors).c_str());
      ++skipped;
      if (!twin_ok) {
        std::printf("FAIL %-28s twin: %s\n", c.name, why.c_str());
        ++failed;
      }
      continue;
    }
    unsigned found = need;
    if (c.detectors != 0) {
      std::vector<run_result> broken;
      for (const setting& s : settings) broken.push_back(spawn(self, c.name, true, s));
      found = reported(c, broken) & need;
      if (found != need) why += "broken variant reported by " + names(found) + ", expected " + names(need) + ":\n" +
                                broken.front().output;
    }
    const bool ok = twin_ok && found == need;
    if (ok) {
      std::printf("PASS %-28s %s: %s%s\n", c.name, c.defect,
                  c.detectors ? ("reported by " + names(found) + "; twin passes").c_str() : "as on a GPU",
                  (c.detectors & ~available) ? (" (" + names(c.detectors & ~available) + ": other build)").c_str()
                                              : "");
      ++passed;
    } else {
      std::printf("FAIL %-28s %s\n%s\n", c.name, c.defect, why.c_str());
      ++failed;
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--case") == 0) return child(argv[2], std::strcmp(argv[3], "broken") == 0);
  if (argc != 1) {
    std::fprintf(stderr, "usage: emu_selftest [--case NAME broken|twin]\n");
    return 2;
  }
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 2;
  self[len] = 0;
  return driver(self);
}
