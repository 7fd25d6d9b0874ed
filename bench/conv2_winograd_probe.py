#!/usr/bin/env python3
"""Would Winograd help lenet's conv2 on this CPU? (docs/performance.md)

Times, with THREADS (2) intra-op threads, best and median of REPS:
  - conv2 as the trainer runs it (oneDNN): 5x5, 32 -> 64 channels, 14x14,
    SAME padding, batch 128; forward, and forward + both gradients;
  - the GEMM phase alone of Winograd F(2x2, 5x5) (36 products [6,272 x 32] .
    [32 x 64]) and F(4x4, 5x5) (64 products [2,048 x 32] . [32 x 64])
    through torch.bmm, without their transforms;
  - one copy of F(2x2, 5x5)'s product output (a pass over memory).
Any Python with torch (PyPI's: bench/peer_env.sh). Usage:
  bench/conv2_winograd_probe.py [THREADS=2] [REPS=30]
"""
import sys
import time

import torch


def best(f, reps):
    f()
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[0] * 1e3, ts[len(ts) // 2] * 1e3


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    n = 128
    x = torch.randn(n, 32, 14, 14, requires_grad=True)
    w = torch.randn(64, 32, 5, 5, requires_grad=True)
    conv = torch.nn.functional.conv2d
    gy = torch.randn(n, 64, 14, 14)
    print(f"torch {torch.__version__}, {threads} threads, best / median of {reps} (ms)")
    with torch.no_grad():
        print("conv2 forward (oneDNN): %.2f / %.2f" % best(lambda: conv(x, w, padding=2), reps))
    print("conv2 forward + both gradients: %.2f / %.2f" % best(
        lambda: torch.autograd.grad(conv(x, w, padding=2), (x, w), gy), max(5, reps // 2)))
    for name, products, rows in (("F(2x2,5x5)", 36, n * 49), ("F(4x4,5x5)", 64, n * 16)):
        v = torch.randn(products, rows, 32)
        u = torch.randn(products, 32, 64)
        gflop = 2 * products * rows * 32 * 64 / 1e9
        print(f"{name} GEMM phase, {products} x [{rows} x 32] . [32 x 64], {gflop:.3f} GFLOP, "
              "torch.bmm: %.2f / %.2f" % best(lambda: torch.bmm(v, u), reps))
    m = torch.randn(36, n * 49, 64)
    print(f"a copy of F(2x2,5x5)'s products ({m.numel() * 4 / 1e6:.0f} MB): %.2f / %.2f"
          % best(m.clone, reps))


if __name__ == "__main__":
    main()
