// flopscope account: parameters, FLOPs in two conventions, activation memory and matmul shapes of
// a transformer, per layer; the arithmetic of a training run; a step predicted from measured
// matmuls (account_predict.cpp).
//   flopscope account --model gpt2-small [--batch 8] [--seq 1024] [--dtype bf16] [--json]
//   flopscope account --config FILE.json [...]         any config (keys: see read_config)
//   flopscope account --mlp 4096x8 [--batch 1024]      the lecture's deep linear network
//   flopscope account --list | --rules [--json]        the presets; the full count's table
//   flopscope account --predict RUN_DIR --model gpt2-small --batch 8 --seq 1024 [--json]
//   flopscope account train --params 70e9 --tokens 15e12 --device h100 --mfu 0.5 --devices 1024
//   flopscope account train --model gpt2-small --tokens 300e9 [--seq 1024] ...  (+ the exact count)
//   flopscope account train --memory 8x80GB [--dtype bf16] [--optimizer adamw] [--no-master-weights]
//   flopscope account infer --model llama-3-8b --device h100 --batch 1,64 [--prompt 1024] [--json]
//   flopscope account train --step-time 0.35s --model gpt2-small --batch 8 --seq 1024 --device h100
// Conventions: model.hpp (layers, activations), accounting.hpp (Note [PyTorch's flop counter],
// Note [full count]), training.hpp (Note [6NT]). Every count is exact; a value that does not fit
// is a one-line error naming it.
#include <algorithm>
#include "account.hpp"
#include "account_comm.hpp"
#include "commands.hpp"

namespace flopscope::cli {

int cmd_account(const Args& args) {
  if (!args.empty() && args[0] == "train") {
    const Args train(args.begin() + 1, args.end());
    if (wants_data_parallel(train)) return cmd_train_data_parallel(train);  // --busbw: account_comm.cpp
    return account_train(train);
  }
  if (!args.empty() && args[0] == "infer") return account_infer(Args(args.begin() + 1, args.end()));
  return account_model(args);
}

}  // namespace flopscope::cli
