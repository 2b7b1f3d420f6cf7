// The parts of the _core module, one function each (module.cpp calls them in order).
#pragma once

#include "arrays.hpp"

namespace pcpy {

void bind_codecs(nb::module_& m);
void bind_states(nb::module_& m);
void bind_endpoints(nb::module_& m);
void bind_cuda(nb::module_& m);            // CUDA builds only (cuda_py.cu)
void bind_cuda_endpoints(nb::module_& m);  // CUDA builds only (cuda_endpoint_py.cu)
void bind_emulated_device(nb::module_& m);  // emulated-GPU test builds only (emu_py.cpp)

// Spec text -> spec; ValueError naming the offending key otherwise.
pc::spec parse_spec_text(const std::string& text);

// A NumPy view of state memory owned by a bound object (kept alive by the view): f32 and f16
// as such, bf16 as its uint16 bit patterns (NumPy has no bfloat16).
nb::ndarray<nb::numpy> state_view(pc::tensor_view v);

}  // namespace pcpy
