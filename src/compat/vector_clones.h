// The one SIMD dispatch of the tree: a function marked FASTNN_VECTOR_CLONES
// is built twice, for x86-64-v3 (AVX2 with fused multiply-adds) and for the
// baseline, and the dynamic loader picks the clone the CPU runs (GCC
// function multiversioning): 8 floats per instruction where the CPU has
// them, and one binary for every x86-64. Helpers a clone calls must be
// inlined into it (always_inline) to be built for its target. In the
// x86-64-v3 clone GCC contracts a * b + c into one fused multiply-add
// (-ffp-contract=fast, GCC's default); a unit whose values must round the
// same on every CPU compiles with -ffp-contract=off (CMakeLists.txt).
// Not under ThreadSanitizer: the clones' resolver runs while the dynamic
// loader relocates, before TSan's runtime is up, and crashes there.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define FASTNN_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FASTNN_VECTOR_CLONES
#endif
