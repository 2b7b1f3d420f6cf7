// Umbrella header for plain C++ compilers: core, host backend and policy.
#pragma once

#include "core/config.hpp"
#include "core/dtype.hpp"
#include "core/format.hpp"
#include "core/inspect.hpp"
#include "core/shape.hpp"
#include "core/sizes.hpp"
#include "core/spec.hpp"
#include "core/status.hpp"
#include "host/aqsgd.hpp"
#include "host/checkpoint.hpp"
#include "host/codec.hpp"
#include "host/ef.hpp"
#include "host/ef21.hpp"
#include "policy/endpoint.hpp"
#include "policy/policy_parse.hpp"
#include "policy/spec_string.hpp"
