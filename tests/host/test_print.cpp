// Failure messages must be readable without a debugger: doctest prints a status by its name
// (tests/common/print.hpp), not as an integer, in CHECK values, CAPTURE and messages.
#include <doctest/doctest.h>

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
