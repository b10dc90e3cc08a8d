// What the matmul variants of every device share: the check of a problem (matmul.hpp).
#include <string>

#include "flopscope/kernels/matmul.hpp"

namespace flopscope::kernels {

namespace {

bool is_narrow_float(ComputeMode mode) { return mode == ComputeMode::f16 || mode == ComputeMode::bf16; }

}  // namespace

std::optional<std::string> matmul_problem_error(const MatmulProblem& p) {
  for (const TensorRef* t : {&p.a, &p.b, &p.c})
    if (t->dims != 2) return "matmul needs 2-D operands, not " + t->str();
  if (p.a.sizes[1] != p.b.sizes[0] || p.c.sizes[0] != p.a.sizes[0] || p.c.sizes[1] != p.b.sizes[1])
    return "matmul needs A (m x k), B (k x n) and C (m x n), not A " + p.a.str() + ", B " + p.b.str() + ", C " +
           p.c.str();
  const ComputeModeInfo& mode = compute_mode_info(p.mode);
  if (p.a.dtype != mode.a || p.b.dtype != mode.b)
    return std::string(mode.name) + " multiplies " + std::string(dtype_name(mode.a)) + " by " +
           std::string(dtype_name(mode.b)) + ", not " + std::string(dtype_name(p.a.dtype)) + " by " +
           std::string(dtype_name(p.b.dtype));
  const DType wide = mode.accumulate == DType::f64 ? DType::f64 : DType::f32;
  if (p.c.dtype != wide && !(is_narrow_float(p.mode) && p.c.dtype == mode.a))
    return std::string(mode.name) + " writes " + std::string(dtype_name(wide)) +
           (is_narrow_float(p.mode) ? " or " + std::string(dtype_name(mode.a)) : std::string()) + ", not " +
           std::string(dtype_name(p.c.dtype));
  if (p.a.device != p.c.device || p.b.device != p.c.device)
    return "matmul needs A, B and C on one device, not " + p.a.device.str() + ", " + p.b.device.str() + ", " +
           p.c.device.str();
  for (int d = 0; d < 2; ++d)  // (an empty C writes nothing: any strides)
    if (p.c.sizes[d] > 1 && p.c.strides[d] == 0 && p.c.sizes[1 - d] > 0)
      return "C is a broadcast view (a stride of 0), whose elements would be written more than once: " + p.c.str();
  return std::nullopt;
}

}  // namespace flopscope::kernels
