// filled in by the copy kernels
