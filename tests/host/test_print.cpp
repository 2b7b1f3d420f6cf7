// Failure messages must be readable without a debugger: doctest prints a status by its name
// (tests/common/print.hpp), not as an integer, in CHECK values, CAPTURE and messages.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>

#include "../common/print.hpp"

using namespace pipecodec;

TEST_CASE("failure messages print statuses by name") {
  using doctest::toString;  // how doctest stringifies an operand: unqualified, so ADL applies
  CHECK(std::string(toString(status::not_supported).c_str()) == std::string(to_string(status::not_supported)));
  std::ostringstream os;
  os << status::invalid_header;
  CHECK(os.str() == std::string(to_string(status::invalid_header)));
}

TEST_CASE("every status has its enumerator's name, distinct from the others") {
  std::set<std::string> names;
  for (int i = 0; i <= int(status::device_math_mismatch); ++i) {
    const std::string n = status_name(status(i));
    CAPTURE(i);
    CHECK(n != "unknown");
    CHECK(n.find(' ') == std::string::npos);
    CHECK(names.insert(n).second);
  }
  CHECK(std::string(status_name(status::corrupt_payload)) == "corrupt_payload");
  CHECK(std::string(status_name(status(int(status::device_math_mismatch) + 1))) == "unknown");
}
