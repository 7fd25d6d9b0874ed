// What a training or evaluation process sets up once, before its first
// step: how many threads it runs (LibTorch's intra-op team, the BLAS, the
// input pipelines' decoders, under the process's thread limit) and how the
// allocator keeps freed memory.
#pragma once

#include "fastnn/hparams.h"

namespace fastnn::train {

/// Sets LibTorch's intra-op thread count from hp (capped at the machine's
/// cores; 0: every core) and a threaded OpenBLAS to one thread per call;
/// returns the intra-op count used. Under a process limit (ulimit -u) that
/// leaves too few threads for them and `pipelines` input pipelines at
/// once, hp.intra_op_parallelism_threads and hp.num_preprocessing_threads
/// are lowered to what can start, with a warning; ConfigError when not even
/// one of each can start. Call once per process, before any pipeline
/// starts (the threads running later count against the limit).
int configure_threads(HParams& hp, int pipelines = 1);

/// Keeps the memory a training step frees for the next step's tensors
/// instead of returning it to the kernel (glibc's mmap and trim
/// thresholds, raised once; MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_
/// or GLIBC_TUNABLES malloc settings in the environment win).
void keep_freed_memory();

}  // namespace fastnn::train
