#!/usr/bin/env python3
"""The PyTorch peers at their strongest: the workloads of
../shared/bench/peer_pytorch.py (`train` and `fmnist`, the same nets, data,
optimizers and output lines), each with what a performance-minded user
would add. Runs on Debian's PyTorch 1.13 (/usr/bin/python3) and on the
newest from PyPI (bench/peer_env.sh's environment).

Usage:
  peer_strong.py train MODEL BATCH STEPS THREADS [VARIANT]
MODEL: a torchvision model, or TF-slim's topology from ../shared/bench/slim_nets.py
  (slim_resnet_v1_50, _101, _152); the line names its multiply-adds (macs_g=).
  peer_strong.py fmnist EPOCHS THREADS [VARIANT]
VARIANT: eager (default), channels_last, compile (torch.compile, inductor),
  channels_last+compile, bf16 (CPU autocast to bfloat16). A variant this
  PyTorch or CPU cannot run prints "unavailable=REASON" and exits 3.
Prints one line: peer_train|peer_fmnist ... [macs_g=G] variant=V torch=VERSION images_per_sec=X
  [test_acc=Y] [compile_secs=Z]
"""
import gzip
import os
import sys
import time

import numpy as np
import torch


def unavailable(why):
    print(f"unavailable={why} torch={torch.__version__}", flush=True)
    sys.exit(3)


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512_bf16 " in f.read().replace("\n", " ")
    except OSError:
        return False


def prepare(model, variant):
    """The model as the variant runs it, and the autocast context to step in."""
    parts = set(variant.split("+"))
    if parts - {"eager", "channels_last", "compile", "bf16"}:
        raise SystemExit(f"peer_strong: unknown variant {variant}")
    if "channels_last" in parts:
        model = model.to(memory_format=torch.channels_last)
    if "compile" in parts:
        if not hasattr(torch, "compile"):
            unavailable("no_torch.compile_before_2.0")
        model = torch.compile(model)
    if "bf16" in parts:
        if not cpu_has_bf16():
            unavailable("no_AVX512_BF16_on_this_CPU(emulated_bf16_is_slower_than_fp32)")
        return model, lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    import contextlib
    return model, contextlib.nullcontext


def shared_bench():
    """../shared/bench (slim_nets.py: TF-slim's ResNets in PyTorch and a
    multiply-add counter), or FASTNN_SHARED_DIR/bench."""
    root = os.environ.get("FASTNN_SHARED_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")
    path = os.path.join(root, "bench")
    if not os.path.isfile(os.path.join(path, "slim_nets.py")):
        raise SystemExit(f"peer_strong: no slim_nets.py in {path} (set FASTNN_SHARED_DIR)")
    sys.path.insert(0, path)
    import slim_nets
    return slim_nets


def train(model_name, batch, steps, threads, variant):
    torch.set_num_threads(threads)
    size = 299 if "inception" in model_name else 224
    slim_nets = shared_bench()
    m = slim_nets.model(model_name, num_classes=1000)  # slim_resnet_v1_*, or torchvision's
    macs_g = slim_nets.macs(m, size)
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=4e-5)
    x = torch.randn(batch, 3, size, size)
    if "channels_last" in variant:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,))
    lossf = torch.nn.CrossEntropyLoss()
    m, autocast = prepare(m, variant)

    def step():
        opt.zero_grad()
        with autocast():
            out = m(x)
            if isinstance(out, tuple) or hasattr(out, "logits"):
                out = out[0]
            loss = lossf(out, y)
        loss.backward()
        opt.step()

    t = time.time()
    for _ in range(2):
        step()
    warm = time.time() - t
    t = time.time()
    for _ in range(steps):
        step()
    dt = time.time() - t
    print(f"peer_train model={model_name} macs_g={macs_g:.4f} batch={batch} threads={threads} "
          f"variant={variant} "
          f"torch={torch.__version__} images_per_sec={batch * steps / dt:.2f} "
          f"warmup_secs={warm:.1f}", flush=True)


def load_idx(path):
    with gzip.open(path) as f:
        data = f.read()
    nd = int.from_bytes(data[:4], "big") & 0xff
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * nd).reshape(dims)


def fmnist(epochs, threads, variant):
    torch.set_num_threads(threads)
    d = "/usr/share/datasets/fashion-mnist"
    xtr = torch.tensor(load_idx(f"{d}/train-images-idx3-ubyte.gz")).float().div(255).unsqueeze(1)
    ytr = torch.tensor(load_idx(f"{d}/train-labels-idx1-ubyte.gz")).long()
    xte = torch.tensor(load_idx(f"{d}/t10k-images-idx3-ubyte.gz")).float().div(255).unsqueeze(1)
    yte = torch.tensor(load_idx(f"{d}/t10k-labels-idx1-ubyte.gz")).long()
    # peer_pytorch.py's net: TF-slim LeNet (conv5x5/32, pool, conv5x5/64,
    # pool, fc1024, dropout, fc10), SGD momentum 0.05/0.9, batch 128.
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024), torch.nn.ReLU(),
        torch.nn.Dropout(0.5), torch.nn.Linear(1024, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    m, autocast = prepare(net, variant)
    lossf = torch.nn.CrossEntropyLoss()
    bs, n = 128, xtr.shape[0]
    compile_secs = 0.0
    if "compile" in variant:
        # The first step compiles: timed apart, on a batch of the first epoch's
        # size, then the epochs run as the eager peer's.
        t = time.time()
        with autocast():
            loss = lossf(m(xtr[:bs]), ytr[:bs])
        loss.backward()
        opt.zero_grad()
        compile_secs = time.time() - t
    t = time.time()
    seen = 0
    for _ in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n - bs + 1, bs):
            idx = perm[i:i + bs]
            opt.zero_grad()
            xb = xtr[idx]
            if "channels_last" in variant:
                xb = xb.contiguous(memory_format=torch.channels_last)
            with autocast():
                loss = lossf(m(xb), ytr[idx])
            loss.backward()
            opt.step()
            seen += bs
    dt = time.time() - t
    net.eval()
    with torch.no_grad():
        acc = (net(xte).argmax(1) == yte).float().mean().item()
    print(f"peer_fmnist epochs={epochs} threads={threads} variant={variant} "
          f"torch={torch.__version__} images_per_sec={seen / dt:.1f} test_acc={acc:.4f} "
          f"compile_secs={compile_secs:.1f}", flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 5 and a[0] == "train":
        train(a[1], int(a[2]), int(a[3]), int(a[4]), a[5] if len(a) > 5 else "eager")
    elif len(a) >= 3 and a[0] == "fmnist":
        fmnist(int(a[1]), int(a[2]), a[3] if len(a) > 3 else "eager")
    else:
        raise SystemExit(__doc__)
