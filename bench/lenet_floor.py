"""LeNet's training step against the sum of its kernels.

Run with the peer's python (bench/peer_python.sh: PEER_PYTHON=pypi gives the
PyPI LibTorch whose oneDNN/MKL kernels our --torch-pypi build links):

  .cache/torch_pypi/venv-*/bin/python bench/lenet_floor.py [THREADS=2] [SECONDS=1.5]

Prints, batch 128, TF-slim's LeNet (conv5x5/32, pool, conv5x5/64, pool,
fc1024, dropout, fc10, softmax cross-entropy, momentum SGD):
  - each layer's forward and backward alone, best of SECONDS of repeats on the
    same tensors (warm caches: a lower bound for the layer inside a step);
  - the sum of them: the "kernel floor", the step if nothing but these
    kernels ran and each ran at its best;
  - the whole eager step (the peer's loop on an in-memory batch), median;
  - the sgemm peak (2048 and 4096 square products) as the machine's limit.
Training GFLOP per image is the hand count of bench/gflops.sh (0.0833).
"""
import statistics
import sys
import time

import torch

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 2
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
BATCH = 128
torch.set_num_threads(THREADS)
torch.manual_seed(0)


def best_ms(fn):
    fn()
    start, best = time.perf_counter(), float("inf")
    while time.perf_counter() - start < SECONDS:
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def layer(name, module, shape, input_grad=True):
    """Forward alone, then forward + backward (weights' and, where a layer
    above needs it, the input's gradient); backward = the difference."""
    x = torch.randn(shape, requires_grad=input_grad)
    with torch.no_grad():
        fwd = best_ms(lambda: module(x))
    y = module(x)
    go = torch.randn_like(y)
    wrt = ([x] if input_grad else []) + list(getattr(module, "parameters", list)())
    both = best_ms(lambda: torch.autograd.grad(module(x), wrt, go))
    return name, fwd, max(both - fwd, 0.0)


conv1 = torch.nn.Conv2d(1, 32, 5, padding=2)
conv2 = torch.nn.Conv2d(32, 64, 5, padding=2)
fc3 = torch.nn.Linear(7 * 7 * 64, 1024)
fc4 = torch.nn.Linear(1024, 10)
labels = torch.randint(0, 10, (BATCH,))
rows = [
    layer("conv1 5x5 1->32, 28x28", conv1, (BATCH, 1, 28, 28), input_grad=False),
    layer("relu1", torch.nn.ReLU(), (BATCH, 32, 28, 28)),
    layer("pool1", torch.nn.MaxPool2d(2), (BATCH, 32, 28, 28)),
    layer("conv2 5x5 32->64, 14x14", conv2, (BATCH, 32, 14, 14)),
    layer("relu2", torch.nn.ReLU(), (BATCH, 64, 14, 14)),
    layer("pool2", torch.nn.MaxPool2d(2), (BATCH, 64, 14, 14)),
    layer("fc3 3136->1024", fc3, (BATCH, 3136)),
    layer("relu3", torch.nn.ReLU(), (BATCH, 1024)),
    layer("dropout 0.5", torch.nn.Dropout(0.5), (BATCH, 1024)),
    layer("fc4 1024->10", fc4, (BATCH, 1024)),
    layer("cross-entropy", lambda z: torch.nn.functional.cross_entropy(z, labels), (BATCH, 10)),
]
net = torch.nn.Sequential(conv1, torch.nn.ReLU(), torch.nn.MaxPool2d(2), conv2, torch.nn.ReLU(),
                          torch.nn.MaxPool2d(2), torch.nn.Flatten(), fc3, torch.nn.ReLU(),
                          torch.nn.Dropout(0.5), fc4)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for p in net.parameters():
    p.grad = torch.randn_like(p)
rows.append(("momentum SGD update", best_ms(opt.step), 0.0))

xb = torch.rand(BATCH, 1, 28, 28)


def step():
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(xb), labels).backward()
    opt.step()


for _ in range(5):
    step()
times = []
for _ in range(40):
    t = time.perf_counter()
    step()
    times.append((time.perf_counter() - t) * 1e3)
whole = statistics.median(times)

peak = 0.0
for n in (2048, 4096):
    a, b = torch.randn(n, n), torch.randn(n, n)
    peak = max(peak, 2 * n**3 / best_ms(lambda: a @ b) / 1e6)

print(f"torch {torch.__version__}, {THREADS} threads, batch {BATCH}")
print("| layer | forward ms | backward ms |")
print("|---|---|---|")
for name, f, b in rows:
    print(f"| {name} | {f:.2f} | {b:.2f} |")
floor = sum(f + b for _, f, b in rows)
gflop = 0.0833
print(f"kernel_floor_ms={floor:.1f} floor_images_per_sec={BATCH / floor * 1e3:.0f} "
      f"whole_step_ms={whole:.1f} step_images_per_sec={BATCH / whole * 1e3:.0f} "
      f"sgemm_peak_gflops={peak:.1f} "
      f"floor_fraction_of_peak={BATCH / floor * 1e3 * gflop / peak:.2f} "
      f"step_fraction_of_peak={BATCH / whole * 1e3 * gflop / peak:.2f}")
