// flopscope: the library's accounting and numerics, for people.
//   flopscope <command> [args...]; `flopscope help` lists the commands.
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
  if (std::string_view(argv[1]) == "help" || std::string_view(argv[1]) == "--help") {
    print_help();
    return check_output("help", 0);
  }
  std::string_view name = argv[1];
  Args args(argv + 2, argv + argc);
  for (const auto& command : kCommands) {
    if (command.name != name) continue;
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
