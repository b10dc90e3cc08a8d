// `flopscope account train --busbw ...`: a data-parallel step's communication (account_comm.cpp).
#pragma once

#include "commands.hpp"

namespace flopscope::cli {

// True when the train arguments ask for the data-parallel account (they name --busbw).
bool wants_data_parallel(const Args& train_args);
// The data-parallel account of `flopscope account train` (the arguments after "train").
int cmd_train_data_parallel(const Args& train_args);

}  // namespace flopscope::cli
