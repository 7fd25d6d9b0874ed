// Loops built twice, for AVX2 and the baseline, picked at load time (GCC
// function multiversioning): 8 floats per instruction where the CPU has it,
// and still one binary for every x86-64. Not under ThreadSanitizer: the
// clones' resolver runs while the dynamic loader relocates, before TSan's
// runtime is up, and crashes there.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define FASTNN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTNN_VECTOR_CLONES
#endif

// A loop built by hand for AVX2 with fused multiply-adds beside its baseline
// build (target_clones' "avx2" has no FMA): mark the first FASTNN_AVX2_FMA
// inside #ifdef FASTNN_AVX2_FMA_PATH, then FASTNN_PICK_AVX2_FMA(fast,
// baseline) picks at run time. Same exclusions as above.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define FASTNN_AVX2_FMA_PATH 1
#define FASTNN_AVX2_FMA __attribute__((target("avx2,fma")))
#define FASTNN_PICK_AVX2_FMA(fast, baseline) \
  ((__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? (fast) : (baseline))
#else
#define FASTNN_PICK_AVX2_FMA(fast, baseline) (baseline)
#endif
