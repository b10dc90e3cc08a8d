// The `flopscope` command-line tool: one function per subcommand, listed once in main.cpp.
// Each takes the arguments after its name and returns the exit code (0 ok, 2 bad input).
#pragma once

#include <string>
#include <vector>

namespace flopscope::cli {

using Args = std::vector<std::string>;

// Thrown for bad input; main prints "flopscope <command>: <message>" on one line and exits 2.
struct UsageError {
  std::string message;
};

int cmd_peaks(const Args& args);
int cmd_dtypes(const Args& args);
int cmd_convert(const Args& args);
int cmd_memory(const Args& args);
int cmd_einsum(const Args& args);
int cmd_view(const Args& args);
int cmd_init(const Args& args);
int cmd_account(const Args& args);

}  // namespace flopscope::cli
