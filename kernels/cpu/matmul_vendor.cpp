// The CPU vendor libraries' matmuls, rows of the one CPU matmul table (kernels/cpu/matmul.cpp).
//
// Variants:
//   onednn    oneDNN's matmul primitive (what PyTorch runs on the CPU): f32, and bf16 and f16
//             where this oneDNN build implements them on this CPU (oneDNN 2.6: bf16 needs
//             AVX512_BF16 or AVX512 core, f16 AVX512-FP16); any strides, as memory descriptors.
//             The primitive descriptor is created by unavailable() (a failure is the skip,
//             quoting oneDNN's message) and again by prepare(), with the primitive and its
//             memory objects; the timed call is execute() and the stream's wait().
//   openblas  OpenBLAS cblas_sgemm / cblas_dgemm (what numpy runs), row-major, each operand
//             with one unit stride (a transposed view is CblasTrans of the array under it).
// Without the library (libdnnl-dev, libopenblas-dev) the rows stay and say so.
// Also matmul_reference_blas (matmul.hpp): every element's f64 reference by cblas_dgemm, for
// shapes where the reference loop is too slow.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "flopscope/cpu_info.hpp"
#include "flopscope/tensor.hpp"
#include "matmul_vendor.hpp"

#ifdef FLOPSCOPE_HAVE_ONEDNN
#include <dnnl.hpp>
#endif
#ifdef FLOPSCOPE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace flopscope::kernels {

namespace {

// What every CPU variant checks first.
std::optional<std::string> cpu_problem_error(const MatmulProblem& p) {
  if (auto error = matmul_problem_error(p)) return error;
  if (!p.c.device.is_cpu()) return "a CPU library, not for " + p.c.device.str();
  return std::nullopt;
}

std::string operand_dtypes(const MatmulProblem& p) {
  return std::string(dtype_name(p.a.dtype)) + " x " + std::string(dtype_name(p.b.dtype)) + " -> " +
         std::string(dtype_name(p.c.dtype));
}

}  // namespace

// ---- oneDNN -------------------------------------------------------------------------------------

#ifdef FLOPSCOPE_HAVE_ONEDNN
namespace {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

const char* status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out_of_memory";
    case dnnl_invalid_arguments: return "invalid_arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_iterator_ends: return "iterator_ends";
    case dnnl_runtime_error: return "runtime_error";
    case dnnl_not_required: return "not_required";
  }
  return "unknown status";
}

std::optional<dnnl::memory::data_type> onednn_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return dnnl::memory::data_type::f32;
    case DType::bf16: return dnnl::memory::data_type::bf16;
    case DType::f16: return dnnl::memory::data_type::f16;
    default: return std::nullopt;
  }
}

dnnl::memory::desc onednn_desc(const TensorRef& t) {
  return dnnl::memory::desc({t.sizes[0], t.sizes[1]}, *onednn_type(t.dtype), {t.strides[0], t.strides[1]});
}

const dnnl::engine& onednn_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::matmul::primitive_desc onednn_primitive_desc(const MatmulProblem& p) {
  const dnnl::matmul::desc desc(onednn_desc(p.a), onednn_desc(p.b), onednn_desc(p.c));
  return dnnl::matmul::primitive_desc(desc, onednn_engine());
}

}  // namespace

std::optional<std::string> onednn_matmul_unavailable(const MatmulProblem& p) {
  if (auto error = cpu_problem_error(p)) return error;
  for (const TensorRef* t : {&p.a, &p.b, &p.c})
    if (!onednn_type(t->dtype))
      return onednn_version() + " has no " + std::string(dtype_name(t->dtype)) + " data type (dnnl::memory::data_type)";
  if (p.m() == 0 || p.n() == 0 || p.k() == 0)  // 2.6.3's primitive descriptor divides by it (SIGFPE)
    return onednn_version() + " takes no matmul with a zero dimension";
  try {
    onednn_primitive_desc(p);
  } catch (const dnnl::error& error) {
    return onednn_version() + ": " + error.what() + " (" + status_name(error.status) + ") for " + operand_dtypes(p) +
           " on this CPU (" + this_cpu().vector_isa() + ")";
  }
  return std::nullopt;
}

Runner onednn_matmul_prepare(const MatmulProblem& p) {
  if (auto reason = onednn_matmul_unavailable(p)) throw std::runtime_error(*reason);
  struct Prepared {
    dnnl::stream stream;
    dnnl::matmul matmul;
    std::unordered_map<int, dnnl::memory> args;
  };
  const auto pd = onednn_primitive_desc(p);
  const dnnl::engine& engine = onednn_engine();
  auto prepared = std::make_shared<Prepared>(Prepared{
      dnnl::stream(engine),
      dnnl::matmul(pd),
      {{DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), engine, p.a.element_data())},
       {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), engine, p.b.element_data())},
       {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), engine, p.c.element_data())}}});
  return [prepared](Stream) {
    prepared->matmul.execute(prepared->stream, prepared->args);
    prepared->stream.wait();
  };
}
#else
std::optional<std::string> onednn_matmul_unavailable(const MatmulProblem&) {
  return "built without oneDNN (Debian libdnnl-dev not found at configure time)";
}
Runner onednn_matmul_prepare(const MatmulProblem& p) {
  throw std::runtime_error(*onednn_matmul_unavailable(p));
}
#endif

// ---- OpenBLAS -----------------------------------------------------------------------------------

#ifdef FLOPSCOPE_HAVE_OPENBLAS
namespace {

// How CBLAS (row-major) reads an operand: as stored, or the transpose of the array under a
// transposed view; and the leading dimension. nullopt without a unit stride.
struct CblasOperand {
  CBLAS_TRANSPOSE transpose;
  blasint leading;
};

std::optional<CblasOperand> cblas_operand(const TensorRef& t) {
  const std::int64_t rows = t.sizes[0], cols = t.sizes[1];
  const auto fits = [](std::int64_t v) { return v <= std::int64_t(std::numeric_limits<blasint>::max()); };
  if ((cols == 1 || t.strides[1] == 1) && (rows == 1 || t.strides[0] >= cols)) {
    const std::int64_t leading = rows == 1 ? std::max<std::int64_t>(cols, 1) : t.strides[0];
    if (fits(leading)) return CblasOperand{CblasNoTrans, blasint(leading)};
  }
  if ((rows == 1 || t.strides[0] == 1) && (cols == 1 || t.strides[1] >= rows)) {
    const std::int64_t leading = cols == 1 ? std::max<std::int64_t>(rows, 1) : t.strides[1];
    if (fits(leading)) return CblasOperand{CblasTrans, blasint(leading)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> openblas_matmul_unavailable(const MatmulProblem& p) {
  if (auto error = cpu_problem_error(p)) return error;
  if (p.mode != ComputeMode::f32 && p.mode != ComputeMode::f64)
    return "OpenBLAS's CBLAS GEMMs here are sgemm and dgemm: no " + operand_dtypes(p);
  if (p.c.dtype != p.a.dtype) return "cblas_?gemm writes C in the operands' dtype, not " + operand_dtypes(p);
  for (std::int64_t size : {p.m(), p.n(), p.k()})
    if (size > std::int64_t(std::numeric_limits<blasint>::max()))
      return "a size beyond CBLAS's " + std::to_string(sizeof(blasint) * 8) + "-bit integers";
  for (const TensorRef* t : {&p.a, &p.b})
    if (!cblas_operand(*t)) return "CBLAS needs each operand with a unit stride (row-major or transposed), not " + t->str();
  const auto c = cblas_operand(p.c);
  if (!c || c->transpose != CblasNoTrans) return "CBLAS needs C row-major with a unit column stride, not " + p.c.str();
  return std::nullopt;
}

bool matmul_reference_blas(const MatmulProblem& p, double* sums, double* abs_sums) {
  if (auto error = matmul_problem_error(p)) throw std::invalid_argument("matmul_reference_blas: " + *error);
  const std::int64_t m = p.m(), n = p.n(), k = p.k();
  for (std::int64_t size : {m, n, k})
    if (size > std::int64_t(std::numeric_limits<blasint>::max()))
      throw std::invalid_argument("matmul_reference_blas: a size beyond CBLAS's integers");
  // Row-major f64 copies of the operands' values.
  const auto decode = [](const TensorRef& t) {
    const std::int64_t rows = t.sizes[0], cols = t.sizes[1], size = std::int64_t(t.element_size());
    std::vector<double> values(std::size_t(rows * cols));
    const auto* base = static_cast<const unsigned char*>(t.element_data());
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        values[std::size_t(r * cols + c)] = load_element(base + (r * t.strides[0] + c * t.strides[1]) * size, t.dtype);
    return values;
  };
  std::vector<double> a = decode(p.a), b = decode(p.b);
  const bool fp8 = p.a.dtype == DType::f8e4m3 || p.a.dtype == DType::f8e5m2;
  const double alpha = fp8 ? double(p.scale_a) * double(p.scale_b) : 1.0;
  const auto gemm = [&](double scale, double* out) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(m), blasint(n), blasint(k), scale, a.data(),
                blasint(std::max<std::int64_t>(k, 1)), b.data(), blasint(std::max<std::int64_t>(n, 1)), 0.0, out,
                blasint(std::max<std::int64_t>(n, 1)));
  };
  gemm(alpha, sums);
  for (double& v : a) v = std::fabs(v);
  for (double& v : b) v = std::fabs(v);
  gemm(std::fabs(alpha), abs_sums);
  return true;
}

Runner openblas_matmul_prepare(const MatmulProblem& p) {
  if (auto reason = openblas_matmul_unavailable(p)) throw std::runtime_error(*reason);
  const CblasOperand a = *cblas_operand(p.a), b = *cblas_operand(p.b), c = *cblas_operand(p.c);
  const auto m = blasint(p.m()), n = blasint(p.n()), k = blasint(p.k());
  if (p.mode == ComputeMode::f32)
    return [a, b, c, m, n, k, pa = p.a.ptr<float>(), pb = p.b.ptr<float>(), pc = p.c.ptr<float>()](Stream) {
      cblas_sgemm(CblasRowMajor, a.transpose, b.transpose, m, n, k, 1.0f, pa, a.leading, pb, b.leading, 0.0f, pc,
                  c.leading);
    };
  return [a, b, c, m, n, k, pa = p.a.ptr<double>(), pb = p.b.ptr<double>(), pc = p.c.ptr<double>()](Stream) {
    cblas_dgemm(CblasRowMajor, a.transpose, b.transpose, m, n, k, 1.0, pa, a.leading, pb, b.leading, 0.0, pc, c.leading);
  };
}
#else
bool matmul_reference_blas(const MatmulProblem&, double*, double*) { return false; }
std::optional<std::string> openblas_matmul_unavailable(const MatmulProblem&) {
  return "built without OpenBLAS (Debian libopenblas-dev not found at configure time)";
}
Runner openblas_matmul_prepare(const MatmulProblem& p) {
  throw std::runtime_error(*openblas_matmul_unavailable(p));
}
#endif

}  // namespace flopscope::kernels
