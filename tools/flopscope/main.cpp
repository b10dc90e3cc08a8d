// flopscope: the library's accounting and numerics, for people.
//   flopscope <command> [args...]; `flopscope help` lists the commands.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "commands.hpp"

namespace {

using flopscope::cli::Args;

struct Command {
  std::string_view name;     // "account", or a subcommand: "account train"
  std::string_view summary;  // one line for `flopscope help`
  std::string_view usage;    // what `flopscope <name> --help` prints
  int (*run)(const Args&);   // nullptr for a subcommand (its command dispatches it)
};

// One row per command and subcommand: its summary and its usage, the only copy of either.
constexpr std::array kCommands = {
    Command{"peaks", "theoretical peaks of the known GPUs and of this CPU, with their formulas",
            "usage: flopscope peaks\n"
            "  the GPU table (SMs x FLOPs per clock x clock, checked against each datasheet, sources in each row)\n"
            "  and this CPU's peaks per GHz from its detected ISA; bench_peak measures the real clock.\n",
            flopscope::cli::cmd_peaks},
    Command{"dtypes", "dtype properties and what values become in each (--value V, --accumulate, --json)",
            "usage: flopscope dtypes [--value V]... [--saturate] [--json]\n"
            "       flopscope dtypes --accumulate [--count N] [--term V] [--seed S] [--json]\n"
            "  every dtype's bits, range, eps and aliases (PyTorch's and ml_dtypes' names), the compute modes;\n"
            "  --value: what V becomes in each dtype; --accumulate: a long sum in f16/bf16 vs an f32 accumulator.\n",
            flopscope::cli::cmd_dtypes},
    Command{"convert", "convert numbers (stdin or args) --to DTYPE [--saturate]: bits, value, what happened",
            "usage: flopscope convert --to DTYPE [--saturate] [VALUE...]\n"
            "  VALUEs from the arguments, else one per line from standard input (decimals, inf, nan, 0x f32 bits);\n"
            "  each line: the input, its bits in DTYPE, the value stored, what happened (exact, rounded, ...).\n",
            flopscope::cli::cmd_convert},
    Command{"memory", "bytes of a tensor (--shape 49152x12288) or of a training state (--params 7e9)",
            "usage: flopscope memory --shape 49152x12288 [--dtype DTYPE]\n"
            "       flopscope memory --params 7e9|70B [--optimizer adamw|sgd|...] [--dtype f32] [--no-master-weights]\n",
            flopscope::cli::cmd_memory},
    Command{"einsum", "output shape and FLOPs of an einsum: \"bij,bkj->bik\" --shapes 2x3x4 2x5x4 (--json)",
            "usage: flopscope einsum EQUATION [--shapes S1 S2 ...] [--order left-to-right|optimal]\n"
            "                        [--form auto|classic|named] [--json]\n"
            "  with --shapes: the output shape and FLOPs (torch.utils.flop_counter's count);\n"
            "  without: the FLOP formula in the equation's letters (\"b t d, d f -> b t f\": 2*b*t*d*f).\n",
            flopscope::cli::cmd_einsum},
    Command{"view", "is an einops rearrange a view (its strides) or a copy (its bytes, and its time from a run)",
            "usage: flopscope view PATTERN --dims NAME=LENGTH,... [--dtype f32] [--run RUN_DIR] [--json]\n"
            "  e.g. flopscope view \"b t (h d) -> b h t d\" --dims b=8,t=1024,h=12,d=64 --dtype bf16\n"
            "  a view: its strides; a copy: the bytes it moves and, with --run, the time that the run's\n"
            "  bench_strided rates predict (the measured permutation closest in kind and size, named).\n",
            flopscope::cli::cmd_view},
    Command{"init", "std of x @ w for randn, Xavier and trunc_normal weights (--input-dim 16384 --output-dim 32)",
            "usage: flopscope init --input-dim N --output-dim N [--batch 1] [--seed 0] [--dtype f32] [--json]\n",
            flopscope::cli::cmd_init},
    Command{"account", "parameters, FLOPs (PyTorch's and full), activations of a transformer (--model gpt2-small); "
                       "train, infer, --predict RUN_DIR",
            "usage: flopscope account (--model NAME | --config FILE.json | --hf-config PATH | --mlp DIMxLAYERS)\n"
            "                         [--batch 8] [--seq 1024] [--dtype bf16] [--predict RUN_DIR] [--json]\n"
            "       flopscope account --list | --rules [--json]\n"
            "       flopscope account train ...   (flopscope account train --help)\n"
            "       flopscope account infer ...   (flopscope account infer --help)\n"
            "  per layer: parameters, forward and backward FLOPs (pytorch and full conventions), activation bytes;\n"
            "  --predict: the step predicted from a run directory's measured matmuls (./bench.sh writes one).\n",
            flopscope::cli::cmd_account},
    Command{"account train", "",
            "usage: flopscope account train --params 70B|70e9 --tokens 15T [--device h100 --mfu 0.5 [--devices N]]\n"
            "       flopscope account train --model NAME --tokens 300e9 [--seq 1024] ...  (+ the exact count)\n"
            "       flopscope account train --memory 8x80GB [--dtype bf16] [--optimizer adamw] [--no-master-weights]\n"
            "       flopscope account train --step-time 0.35s --model NAME --batch 8 --seq 1024 --device h100\n"
            "       flopscope account train --model NAME --devices 8 --busbw 400GB/s|RUN_DIR --compute-time 50ms\n"
            "                               [--sharding zero1|zero2|zero3]\n"
            "  --device NAME, or --peak FLOP/s for any other device; add --json for JSON.\n",
            nullptr},
    Command{"account infer", "",
            "usage: flopscope account infer (--model NAME | --config FILE.json | --hf-config PATH)\n"
            "                               [--batch 1,64] [--prompt 1024] [--context 1024] [--dtype bf16]\n"
            "                               [--kv-dtype bf16] [--device h100 | --peak 989T --bandwidth 3.35TB/s] [--json]\n"
            "  KV cache bytes per token and per sequence; prefill FLOPs of a --prompt; per-token decode FLOPs at\n"
            "  --context keys; per batch: FLOPs, bytes (weights once per step + KV), FLOP/byte and the roofline\n"
            "  bound on tokens/s (--peak and --bandwidth override the device's); the crossover batch of decode.\n",
            nullptr},
};

const Command* find_command(std::string_view name) {
  for (const auto& command : kCommands)
    if (command.name == name) return &command;
  return nullptr;
}

// `flopscope account train --help` and `flopscope help account train`: the usage of the most
// specific command that the words name.
const Command* usage_of(std::string_view name, const Args& args) {
  const Command* command = find_command(name);
  if (command && !args.empty())
    if (const Command* sub = find_command(std::string(name) + " " + args[0])) return sub;
  return command;
}

bool wants_help(const Args& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& arg) { return arg == "--help" || arg == "-h"; });
}

void print_help() {
  std::printf("usage: flopscope <command> [args...]\n\ncommands:\n");
  for (const auto& command : kCommands)
    if (command.run)
      std::printf("  %-10.*s %.*s\n", int(command.name.size()), command.name.data(),
                  int(command.summary.size()), command.summary.data());
  std::printf("\n`flopscope <command> --help` (or `flopscope help <command>`) prints its usage.\n");
}

// The text with control characters escaped ("\n", "\x01"): a message quotes what the user typed,
// and stays one line whatever that was.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

int fail(std::string_view name, std::string_view message) {
  std::fflush(stdout);
  std::fprintf(stderr, "flopscope %s: %s\n", one_line(name).c_str(), one_line(message).c_str());
  return 2;
}

// Output that could not be written (a full disk, a closed pipe) is an error, not a success.
int check_output(std::string_view name, int status) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  const std::string reason = errno != 0 ? std::string(": ") + std::strerror(errno) : std::string();
  return fail(name, "cannot write standard output" + reason);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "flopscope: missing command (try: flopscope help)\n");
    return 2;
  }
  std::string name = argv[1];
  Args args(argv + 2, argv + argc);
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.empty()) {
      print_help();
      return check_output("help", 0);
    }
    name = args[0];  // `flopscope help account train` is `flopscope account train --help`
    args.erase(args.begin());
    args.push_back("--help");
  }
  if (const Command* command = wants_help(args) ? usage_of(name, args) : nullptr) {
    std::printf("%.*s", int(command->usage.size()), command->usage.data());
    return check_output(name, 0);
  }
  for (const auto& command : kCommands) {
    if (command.name != name || !command.run) continue;
    try {
      return check_output(name, command.run(args));
    } catch (const flopscope::cli::UsageError& error) {
      return fail(name, error.message);
    } catch (const std::bad_alloc&) {
      return fail(name, "out of memory (the sizes given need more memory than this machine has)");
    } catch (const std::exception& error) {
      return fail(name, error.what());
    }
  }
  std::fprintf(stderr, "flopscope: unknown command '%s' (try: flopscope help)\n", one_line(name).c_str());
  return 2;
}
