#!/usr/bin/env python3
"""PyTorch peer of bench/gpu_vs_pytorch.sh: ResNet-50 training on one GPU.

What a PyTorch user would run instead of train_image_classifier: eager mode
(or, with --compile, the model under torch.compile: inductor, Triton kernels),
channels_last, torch.autocast (fp16 with a GradScaler, or bf16), SGD with
momentum 0.9, synthetic images and labels made once on the GPU. The warm-up
steps are not timed. Runs on torch 2.0 and newer (torch.autocast since 1.10;
torch.amp.GradScaler from 2.3, torch.cuda.amp.GradScaler before). The model is torchvision's resnet50 when torchvision
imports, else the same network defined below (ResNet-50 v1.5: bottlenecks
3-4-6-3, stride on the 3x3 convolution, torchvision's initialization).

Usage: bench/gpu_peer_resnet50.py [--precision fp16|bf16|fp32] [--batch-size 256]
           [--steps 50] [--warmup 10] [--image-size 224] [--no-cudnn-benchmark]
           [--profile-steps N] [--compile [MODE]]
Prints one line: peer_gpu_resnet50 ... images_per_sec=X max_memory_allocated_mib=Y
compile_secs=Z (the first step alone, where torch.compile compiles; 0 in eager
mode; the warm-up steps, this one included, are never timed).
With --profile-steps, N more steps under torch.profiler afterwards, and the
same table as our FASTNN_PROFILE_STEPS (docs/performance.md, "Profiling a
step"): wall and CUDA kernel time per step, the kernels by total time.
"""
import argparse
import time

import torch
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    """torchvision.models.resnet50's layer shapes and initialization."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        layers, inplanes = [], 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * Bottleneck.expansion
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def make_model(num_classes):
    try:
        import torchvision
    except ImportError:
        return ResNet50(num_classes), "builtin"
    return torchvision.models.resnet50(num_classes=num_classes), "torchvision"


def make_grad_scaler(enabled):
    """torch.amp.GradScaler("cuda") from torch 2.3; torch.cuda.amp's before
    (the same class, deprecated from 2.4 on)."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def profile(step, steps, top=25):
    """STEPS calls of STEP under torch.profiler: prints wall ms/step, the CUDA
    kernels' ms/step, and the TOP kernels by total time (ms/step, calls/step)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - t0) * 1e3
    rows = {}
    for e in prof.events():
        if e.device_type != DeviceType.CUDA:
            continue
        calls, ms = rows.get(e.name, (0, 0.0))
        rows[e.name] = (calls + 1, ms + e.time_range.elapsed_us() / 1e3)
    busy = sum(ms for _, ms in rows.values())
    print(f"profile of {steps} step(s) (torch.profiler):")
    print(f"  {steps} step(s), wall {wall_ms / steps:.2f} ms/step; CUDA kernels "
          f"{busy / steps:.2f} ms/step ({100 * busy / wall_ms:.0f} % of the wall time)")
    print("  CUDA kernels by total time: ms/step, calls/step, name")
    for name, (calls, ms) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {ms / steps:9.3f} {calls / steps:7.1f}  {name[:300]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=50, help="timed steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (at least one)")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--no-cudnn-benchmark", action="store_true",
                   help="leave cudnn.benchmark off (PyTorch's default)")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="then profile this many more steps (torch.profiler)")
    p.add_argument("--compile", nargs="?", const="default", default=None, metavar="MODE",
                   help="torch.compile the model (MODE: default, reduce-overhead, "
                        "max-autotune...; inductor's kernel cache is reused across runs)")
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_peer_resnet50: no CUDA device")
    torch.backends.cudnn.benchmark = not a.no_cudnn_benchmark
    dev = torch.device("cuda")
    torch.manual_seed(0)

    model, source = make_model(a.num_classes)
    model = model.to(dev, memory_format=torch.channels_last).train()
    if a.compile:
        if not hasattr(torch, "compile"):
            raise SystemExit("gpu_peer_resnet50: --compile needs torch 2.0 or newer")
        model = torch.compile(model, mode=None if a.compile == "default" else a.compile)
    # TF-slim's weight decay of bench/resnet50_vs_pytorch.sh.
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=4e-5)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=dev)
    x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, a.num_classes, (a.batch_size,), device=dev)

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": None}[a.precision]
    scaler = make_grad_scaler(enabled=a.precision == "fp16")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step()  # compiles, with --compile
    torch.cuda.synchronize()
    compile_secs = time.perf_counter() - t0 if a.compile else 0.0
    for _ in range(a.warmup - 1):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0

    mib = torch.cuda.max_memory_allocated() / 2**20
    print(f"peer_gpu_resnet50 model={source} precision={a.precision} batch={a.batch_size} "
          f"steps={a.steps} warmup={a.warmup} cudnn_benchmark={torch.backends.cudnn.benchmark} "
          f"tf32_matmul={torch.backends.cuda.matmul.allow_tf32} "
          f"tf32_cudnn={torch.backends.cudnn.allow_tf32} "
          f"compile={a.compile or 'off'} "
          f"torch={torch.__version__} images_per_sec={a.batch_size * a.steps / secs:.2f} "
          f"max_memory_allocated_mib={mib:.0f} compile_secs={compile_secs:.1f}", flush=True)
    if a.profile_steps > 0:
        profile(step, a.profile_steps)


if __name__ == "__main__":
    main()
