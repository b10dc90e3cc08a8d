// The CPU vendor rows of the matmul table (kernels/cpu/matmul.cpp), in matmul_vendor.cpp: private
// to kernels/cpu/.
#pragma once

#include <optional>
#include <string>

#include "flopscope/kernels/matmul.hpp"

namespace flopscope::kernels {

std::optional<std::string> onednn_matmul_unavailable(const MatmulProblem& problem);
Runner onednn_matmul_prepare(const MatmulProblem& problem);

std::optional<std::string> openblas_matmul_unavailable(const MatmulProblem& problem);
Runner openblas_matmul_prepare(const MatmulProblem& problem);

}  // namespace flopscope::kernels
