// ODR check, translation unit B: same calls, compiled separately.
#include "odr_common.hpp"

std::vector<uint8_t> odr_b(const char* spec_text) { return odr::round_trip(spec_text); }
