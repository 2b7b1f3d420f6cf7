// Golden payloads pin wire format v1 and the numerics: every case of golden_cases.hpp must
// encode to tests/golden/<name>.bin byte for byte, and decoding that file (into every dtype,
// plain and accumulating) must hash to the values in tests/golden/manifest.txt. Built twice
// (default flags and -O3 -march=native -ffp-contract=fast) and run in the same test run.
//
// PIPECODEC_GOLDEN_DIR names the directory (set by meson). With PIPECODEC_REGEN_GOLDEN=1 the
// test rewrites the files from the current encoder first; commit them only after checking
// that a format change was intended.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "../common/golden_cases.hpp"
#include "../common/print.hpp"

using namespace pipecodec;

namespace {

uint64_t fnv1a(const std::vector<uint8_t>& b) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint8_t x : b) h = (h ^ x) * 0x100000001B3ull;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string golden_dir() {
  const char* d = std::getenv("PIPECODEC_GOLDEN_DIR");
  return d ? d : "tests/golden";
}

bool regen() {
  const char* r = std::getenv("PIPECODEC_REGEN_GOLDEN");
  return r && std::string(r) == "1";
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// One manifest line: name, payload size and hash, then decoded-tensor hashes: decode into
// f32, f16, bf16, and decode_accumulate into a fixed base tensor of each dtype.
std::string manifest_line(const golden::gcase& c, const std::vector<uint8_t>& payload) {
  std::string line = std::string(c.name) + " " + std::to_string(payload.size()) + " " + hex(fnv1a(payload));
  const uint64_t n = c.shp.size();
  for (int acc = 0; acc < 2; ++acc) {
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
      std::vector<uint8_t> out = acc ? testdata::as_bytes(testdata::uniform(n, 99), t)
                                     : std::vector<uint8_t>(n * dtype_bytes(t), 0xEE);
      const tensor_view v{out.data(), t, c.shp};
      const status st = acc ? host::decode_accumulate(payload.data(), payload.size(), v)
                            : host::decode(payload.data(), payload.size(), v);
      line += " " + (ok(st) ? hex(fnv1a(out)) : std::string("error:") + to_string(st));
    }
  }
  return line;
}

std::map<std::string, std::string> read_manifest(const std::string& path) {
  std::map<std::string, std::string> m;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    m[line.substr(0, line.find(' '))] = line;
  }
  return m;
}

void write_all(const std::string& dir) {
  std::filesystem::create_directories(dir + "/inputs");
  std::ofstream man(dir + "/manifest.txt");
  man << "# name payload_bytes payload_fnv1a decode_{f32,f16,bf16} accumulate_{f32,f16,bf16}"
         " (FNV-1a 64 of the output bytes; see tests/host/test_golden.cpp)\n";
  for (const auto& c : golden::cases()) {
    const auto payload = golden::encode(c);
    REQUIRE_MESSAGE(!payload.empty(), c.name);
    std::ofstream(dir + "/" + c.name + ".bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(payload.data()), std::streamsize(payload.size()));
    const auto input = golden::input_bytes(c);
    std::ofstream(dir + "/inputs/" + c.name + ".raw", std::ios::binary)
        .write(reinterpret_cast<const char*>(input.data()), std::streamsize(input.size()));
    man << manifest_line(c, payload) << "\n";
  }
  MESSAGE("regenerated " << golden::cases().size() << " golden payloads in " << dir);
}

}  // namespace

TEST_CASE("golden payloads are reproduced byte for byte and decode to the recorded tensors") {
  const std::string dir = golden_dir();
  if (regen()) write_all(dir);
  const auto manifest = read_manifest(dir + "/manifest.txt");
  REQUIRE_MESSAGE(!manifest.empty(), "no manifest in " << dir << " (set PIPECODEC_GOLDEN_DIR)");
  std::set<std::string> names;
  for (const auto& c : golden::cases()) {
    CAPTURE_TEXT(c.name);
    REQUIRE_MESSAGE(names.insert(c.name).second, "duplicate case name");
    const auto file = read_file(dir + "/" + c.name + ".bin");
    REQUIRE_MESSAGE(!file.empty(), "missing " << c.name << ".bin: regenerate (see golden_cases.hpp)");
    const auto fresh = golden::encode(c);
    REQUIRE(!fresh.empty());
    CHECK_MESSAGE(fresh == file, "encoder output differs from the golden payload");
    // The input, for encoders outside this test (the Python package re-encodes it): raw
    // bytes of the case's dtype; dtype, shape, spec and seed are in the payload's header.
    CHECK_MESSAGE(read_file(dir + "/inputs/" + c.name + ".raw") == golden::input_bytes(c),
                  "inputs/" << c.name << ".raw differs from the case's input: regenerate");
    const auto it = manifest.find(c.name);
    REQUIRE_MESSAGE(it != manifest.end(), "case missing from manifest.txt");
    CHECK(manifest_line(c, file) == it->second);
  }
  // Every file and manifest line belongs to a case: nothing stale is left pinned.
  CHECK(manifest.size() == names.size());
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".bin") continue;
    CHECK_MESSAGE(names.count(e.path().stem().string()) == 1, "stale golden file " << e.path());
  }
}
