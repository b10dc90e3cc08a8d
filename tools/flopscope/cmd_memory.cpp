// flopscope memory: bytes of a tensor, or of a model's training state, as exact integers.
//   flopscope memory --shape 49152x12288 [--dtype DTYPE]     one dtype, or every dtype
//   flopscope memory --params 7e9 [--optimizer adamw] [--dtype f32] [--no-master-weights]
// Training state: see Note [training state] in lib/include/flopscope/memory.hpp.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/memory.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::cli {

int cmd_memory(const Args& args) {
  std::optional<std::vector<std::int64_t>> shape;
  std::optional<std::int64_t> params;
  std::optional<DType> dtype;
  Optimizer optimizer = Optimizer::adamw;
  bool master_weights = true;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    if (name == "--shape") {
      const std::string text = options.take_value();
      shape = parse_shape(text);
      if (!shape || shape->empty()) throw UsageError{"--shape: cannot parse '" + text + "' (expected e.g. 49152x12288)"};
    } else if (name == "--params") {
      params = exact_count("--params", options.take_value());
    } else if (name == "--dtype") {
      dtype = dtype_option(options.take_value());
    } else if (name == "--optimizer") {
      const std::string text = options.take_value();
      auto parsed = parse_optimizer(text);
      if (!parsed) throw UsageError{"--optimizer: unknown '" + text + "' (known: sgd, momentum, adam, adamw)"};
      optimizer = *parsed;
    } else if (name == "--no-master-weights") {
      master_weights = (options.take_flag(), false);
    } else if (name.empty()) {
      throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    } else {
      options.unknown();
    }
  }
  if (!shape && !params) throw UsageError{"needs --shape DIMS or --params COUNT"};

  // Every count first, so that an overflow is the only output.
  std::int64_t elements = 0;
  std::vector<std::pair<DType, std::int64_t>> bytes;
  std::optional<TrainingMemory> memory;
  const DType parameter_dtype = dtype.value_or(DType::f32);
  try {
    if (shape) {
      elements = checked_numel(*shape);
      for (DType each : kAllDTypes)
        if (!dtype || each == *dtype) bytes.emplace_back(each, tensor_bytes(*shape, each));
    }
  } catch (const SizeOverflow& error) {
    throw UsageError{"--shape " + format_shape(*shape) + ": " + error.what()};
  }
  try {
    if (params) memory = training_memory(*params, parameter_dtype, optimizer, master_weights);
  } catch (const SizeOverflow& error) {
    throw UsageError{"--params " + std::to_string(*params) + ": " + error.what()};
  }

  if (shape) {
    std::printf("tensor %s: %s elements\n", format_shape(*shape).c_str(), format_thousands(elements).c_str());
    for (const auto& [each, count] : bytes)
      std::printf("  %-7.*s %s\n", int(dtype_name(each).size()), dtype_name(each).data(), format_bytes_both(count).c_str());
    if (params) std::printf("\n");
  }
  if (memory) {
    std::printf("training state of %s parameters in %.*s with %.*s:\n", format_thousands(*params).c_str(),
                int(dtype_name(parameter_dtype).size()), dtype_name(parameter_dtype).data(),
                int(optimizer_name(optimizer).size()), optimizer_name(optimizer).data());
    for (const MemoryComponent& c : memory->components)
      std::printf("  %-30s %-4.*s %2lld B/param  %s\n", c.name.c_str(), int(dtype_name(c.dtype).size()),
                  dtype_name(c.dtype).data(), static_cast<long long>(c.bytes_per_parameter),
                  format_bytes_both(c.bytes).c_str());
    std::printf("  %-30s %-4s %2lld B/param  %s\n", "total", "", static_cast<long long>(memory->bytes_per_parameter),
                format_bytes_both(memory->total_bytes).c_str());
    std::printf("(parameters and gradients in the parameter dtype; optimizer state in f32%s; activations not "
                "counted)\n",
                dtype_size(parameter_dtype) < 4 ? (master_weights ? ", with an f32 master copy of the weights"
                                                                   : ", no f32 master weights")
                                                : "");
  }
  return 0;
}

}  // namespace flopscope::cli
