// flopscope: the library's accounting and numerics, for people.
//   flopscope <command> [args...]; `flopscope help` lists the commands.
#include <array>
#include <cstdio>
#include <exception>
#include <string_view>

#include "commands.hpp"

namespace {

using flopscope::cli::Args;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const Args&);
};

// One row per subcommand.
constexpr std::array kCommands = {
    Command{"peaks", "theoretical peaks of the known GPUs and of this CPU, with their formulas",
            flopscope::cli::cmd_peaks},
    Command{"dtypes", "dtype properties and what values become in each (--value V, --accumulate, --json)",
            flopscope::cli::cmd_dtypes},
    Command{"convert", "convert numbers (stdin or args) --to DTYPE [--saturate]: bits, value, what happened",
            flopscope::cli::cmd_convert},
    Command{"memory", "bytes of a tensor (--shape 49152x12288) or of a training state (--params 7e9)",
            flopscope::cli::cmd_memory},
    Command{"einsum", "output shape and FLOPs of an einsum: \"bij,bkj->bik\" --shapes 2x3x4 2x5x4 (--json)",
            flopscope::cli::cmd_einsum},
    Command{"init", "std of x @ w for randn, Xavier and trunc_normal weights (--input-dim 16384 --output-dim 32)",
            flopscope::cli::cmd_init},
    Command{"account", "parameters, FLOPs (PyTorch's and full), activations of a transformer (--model gpt2-small); "
                       "train, --predict RUN_DIR",
            flopscope::cli::cmd_account},
};

void print_help() {
  std::printf("usage: flopscope <command> [args...]\n\ncommands:\n");
  for (const auto& command : kCommands)
    std::printf("  %-10.*s %.*s\n", int(command.name.size()), command.name.data(),
                int(command.summary.size()), command.summary.data());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "help" || std::string_view(argv[1]) == "--help") {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  std::string_view name = argv[1];
  Args args(argv + 2, argv + argc);
  for (const auto& command : kCommands) {
    if (command.name != name) continue;
    try {
      return command.run(args);
    } catch (const flopscope::cli::UsageError& error) {
      std::fprintf(stderr, "flopscope %.*s: %s\n", int(name.size()), name.data(), error.message.c_str());
      return 2;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "flopscope %.*s: %s\n", int(name.size()), name.data(), error.what());
      return 2;
    }
  }
  std::fprintf(stderr, "flopscope: unknown command '%.*s' (try: flopscope help)\n", int(name.size()), name.data());
  return 2;
}
