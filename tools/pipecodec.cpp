// pipecodec: encode, decode, inspect and evaluate tensors from the command line.
// Exit status 0 on success; on any error exactly one line "pipecodec: <why>" on stderr and
// exit status 1 (2 for a usage error, 3 for a payload whose declared output is above the
// --max-elements cap).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/encode_decode.hpp"
#include "cli/eval.hpp"
#include "cli/info.hpp"

namespace {

const char usage[] =
    "usage: pipecodec COMMAND ...\n"
    "  encode --spec SPEC [--seed N] IN OUT   IN: .npy (<f4 or <f2, 1-D or 2-D), or raw with\n"
    "                                         --dtype f32|f16|bf16 --shape N[xM]; specs with\n"
    "                                         rng=sample take --ids IDS.npy ('<i8', 1 x rows)\n"
    "  decode [--dtype f32|f16|bf16] [--max-elements N] IN OUT\n"
    "                                         OUT: .npy (raw bytes for bf16); dtype defaults\n"
    "                                         to the dtype that was encoded; refuses (exit 3)\n"
    "                                         a payload declaring more than N elements\n"
    "                                         (default 268435456 = 2^28)\n"
    "  info IN                                payload header, one `key: value` per line\n"
    "  eval --spec SPEC [--seed N] IN         bits/element, ratio, errors, encode/decode GB/s\n"
    "                                         (IN and --ids as for encode)\n"
    "  eval --spec SPEC --state ef|ef-sample|ef21|aqsgd [--ids IDS.npy] [--seed N]\n"
    "       [--state-dtype fp32|fp16|bf16] [--warmup-steps N] STEP1.npy STEP2.npy ...\n"
    "                                         successive steps through one boundary, sender\n"
    "                                         and receiver: `step: N bytes: B rel_l2_err: E`\n"
    "                                         per step, then `state_equal: yes|no`. aqsgd,\n"
    "                                         ef-sample (EF residual per sample id): rows\n"
    "                                         are samples, --ids is required: '<i8'\n"
    "                                         steps x rows sample ids; --warmup-steps N sends\n"
    "                                         the first N steps whole (plain fp32)\n"
    "SPEC e.g. quant:bits=4,group=128,scale=minmax,round=nearest,scale_dtype=fp16\n";

struct command {
  const char* name;
  void (*run)(int, char**);
};

const command commands[] = {
    {"encode", cli::run_encode}, {"decode", cli::run_decode}, {"info", cli::run_info}, {"eval", cli::run_eval}};

// One line, whatever the message holds (a spec or a path may contain a newline).
void report(const std::string& msg) {
  std::string line = msg;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "pipecodec: %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help"))) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (argc < 2) {
    report("missing command (encode, decode, info or eval; see pipecodec --help)");
    return 2;
  }
  for (const command& c : commands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      c.run(argc, argv);
      if (std::fflush(stdout) != 0) throw cli::error("cannot write to stdout");
      return 0;
    } catch (const std::bad_alloc&) {
      report("out of memory");
    } catch (const cli::limit_error& e) {
      report(e.what());
      return 3;
    } catch (const std::exception& e) {
      report(e.what());
    }
    return 1;
  }
  report(std::string("unknown command '") + argv[1] + "' (encode, decode, info or eval; see pipecodec --help)");
  return 2;
}
