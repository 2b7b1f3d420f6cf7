// ODR check, translation unit A (see odr_main.cpp).
#include "odr_common.hpp"

std::vector<uint8_t> odr_a(const char* spec_text) { return odr::round_trip(spec_text); }
