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
