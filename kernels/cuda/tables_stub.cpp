// Built instead of the .cu files when flopscope is built without CUDA: every CUDA variant table
// is empty (the harness then says, once, that CUDA cases were skipped and why).
#include "flopscope/kernels/activation.hpp"
#include "flopscope/kernels/broadcast.hpp"
#include "flopscope/kernels/convert.hpp"
#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/matmul.hpp"
#include "flopscope/kernels/optimizer.hpp"
#include "flopscope/kernels/peak.hpp"
#include "flopscope/kernels/strided.hpp"

namespace flopscope::kernels {

std::span<const CopyVariant> cuda_copy_variants() { return {}; }
std::span<const GeluVariant> cuda_gelu_variants() { return {}; }
std::span<const ConvertVariant> cuda_convert_variants() { return {}; }
std::span<const FmaChainVariant> cuda_fma_chain_variants() { return {}; }
std::span<const TriadVariant> cuda_triad_variants() { return {}; }
std::span<const MatmulVariant> cuda_matmul_variants() { return {}; }
std::span<const OptimizerVariant> cuda_optimizer_variants() { return {}; }
std::span<const CopyVariant> cuda_strided_variants() { return {}; }
std::span<const BinaryVariant> cuda_broadcast_variants() { return {}; }

}  // namespace flopscope::kernels
