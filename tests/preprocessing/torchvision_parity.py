#!/usr/bin/python3
"""The augmentation ops and policy tables against torchvision's own.

usage: torchvision_parity.py AUGMENT_PARITY_BINARY TMP_DIR

Every op of AutoAugment (ImageNet), RandAugment and TrivialAugmentWide at
every magnitude bin of their spaces, both signs, runs on the same uint8
images through torchvision's _apply_op and through the project's
apply_augment_op (tests/preprocessing/augment_parity.cc); the pixels must be
equal (tolerances below). The spaces (op order, signs, magnitudes) and
AutoAugment's ImageNet sub-policies must be torchvision's. Exit 77 (skipped)
when torchvision cannot be imported: scripts/setup.sh --tests installs
Debian's python3-torchvision.
"""
import os
import struct
import subprocess
import sys

try:
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import autoaugment as aa
except ImportError as e:  # not installed: reported as skipped
    print(f"torchvision_parity: skipped: {e}")
    sys.exit(77)

BINARY, TMP = sys.argv[1], sys.argv[2]
os.makedirs(TMP, exist_ok=True)
FLOAT32_ULP = 2.0**-23

# Largest |difference| allowed per op. Every op is exact against
# torchvision 0.14 on these images: the geometric ops sample with nearest
# interpolation on torch's float32 grid (same roundings, same fused
# multiply-add as the BLAS kernel), and the colour ops repeat _blend's
# float32 products and truncating cast. A magnitude from the policy tables
# may differ from torch.linspace's by one float32 rounding (the spaces
# check below), which is why the ops are compared at the same magnitude.
TOLERANCE = {}


def images():
    g = torch.Generator().manual_seed(26)
    rand = torch.randint(0, 256, (3, 37, 29), dtype=torch.uint8, generator=g)
    # Smooth and low contrast (values 60..180): AutoContrast and Equalize
    # have work to do, Sharpness has edges to sharpen and flat parts.
    yy, xx = torch.meshgrid(torch.arange(40.0), torch.arange(48.0), indexing="ij")
    smooth = torch.stack([60 + 3 * yy, 60 + 2.5 * xx, 120 + 40 * torch.sin(xx / 5 + yy / 7)])
    smooth = (smooth + torch.randint(0, 8, smooth.shape, generator=g)).clamp(0, 255)
    gray = torch.randint(30, 200, (1, 24, 31), dtype=torch.uint8, generator=g)
    square = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=g)
    imagenet = torch.randint(0, 256, (3, 224, 224), dtype=torch.uint8, generator=g)
    return {"rand_37x29": rand, "smooth_40x48": smooth.to(torch.uint8),
            "gray_24x31": gray, "square_32": square, "rand_224": imagenet}


def spaces(h, w):
    return {
        "autoaugment_imagenet": aa.AutoAugment()._augmentation_space(10, (h, w)),
        "randaugment": aa.RandAugment()._augmentation_space(31, (h, w)),
        "trivialaugment": aa.TrivialAugmentWide()._augmentation_space(31),
    }


def ours_space(policy, h, w):
    out = subprocess.run([BINARY, "space", policy, str(h), str(w)], check=True,
                         capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        name, signed, *mags = line.split()
        rows.append((name, signed == "1", [float(m) for m in mags]))
    return rows


failures = []


def check_spaces(h, w):
    for policy, space in spaces(h, w).items():
        ours = ours_space(policy, h, w)
        theirs = [(name, signed, mags.tolist() if mags.ndim > 0 else [])
                  for name, (mags, signed) in space.items()]
        if [r[:2] for r in ours] != [(n, s) for n, s, _ in theirs]:
            failures.append(f"{policy}: ops {[r[:2] for r in ours]} != {[(n, s) for n, s, _ in theirs]}")
            continue
        for (name, _, a), (_, _, b) in zip(ours, theirs):
            bad = len(a) != len(b) or any(
                abs(x - y) > FLOAT32_ULP * max(abs(y), 1e-30) for x, y in zip(a, b))
            if bad:
                failures.append(f"{policy} {name} {h}x{w}: magnitudes {a} != {b}")


def check_autoaugment_policy():
    out = subprocess.run([BINARY, "autoaugment_imagenet"], check=True,
                         capture_output=True, text=True).stdout
    ours = []
    for line in out.splitlines():
        a, pa, ma, b, pb, mb = line.split()
        ours.append(((a, float(pa), None if ma == "-1" else int(ma)),
                     (b, float(pb), None if mb == "-1" else int(mb))))
    theirs = aa.AutoAugment(aa.AutoAugmentPolicy.IMAGENET).policies
    if ours != [tuple(tuple(s) for s in p) for p in theirs]:
        failures.append(f"AutoAugment ImageNet policy: {ours} != {theirs}")


def check_ops(label, img):
    c, h, w = img.shape
    requests = []
    for space in spaces(h, w).values():
        for name, (mags, signed) in space.items():
            values = mags.tolist() if mags.ndim > 0 else [0.0]
            for m in values:
                for s in ([1.0, -1.0] if signed else [1.0]):
                    requests.append((name, float(m) * s))
    # Values off the bins: a non-integer translation, shears and rotations
    # that land source positions near pixel edges, factors below 1.
    requests += [("TranslateX", -7.9), ("TranslateY", 12.6), ("ShearX", 0.137),
                 ("ShearY", -0.42), ("Rotate", 90.0), ("Rotate", -45.0), ("Rotate", 7.77),
                 ("Brightness", -0.33), ("Color", -0.77), ("Contrast", -0.5),
                 ("Sharpness", -0.95), ("Solarize", 128.0), ("Solarize", 127.5),
                 ("Posterize", 1.0), ("Invert", 0.0)]
    requests = list(dict.fromkeys(requests))
    image_path = os.path.join(TMP, f"{label}.bin")
    with open(image_path, "wb") as f:
        f.write(struct.pack("<3i", c, h, w))
        f.write(img.contiguous().numpy().tobytes())
    req_path = os.path.join(TMP, f"{label}.txt")
    with open(req_path, "w") as f:
        for name, m in requests:
            f.write(f"{name} {m!r}\n")
    out_path = os.path.join(TMP, f"{label}.out")
    subprocess.run([BINARY, "ops", image_path, req_path, out_path], check=True)
    data = open(out_path, "rb").read()
    n = c * h * w
    if len(data) != n * len(requests):
        failures.append(f"{label}: {len(data)} bytes back, expected {n * len(requests)}")
        return 0
    worst = {}
    for k, (name, m) in enumerate(requests):
        ours = torch.frombuffer(bytearray(data[k * n:(k + 1) * n]), dtype=torch.uint8).view(c, h, w)
        theirs = aa._apply_op(img.clone(), name, m, InterpolationMode.NEAREST, None)
        diff = (ours.int() - theirs.int()).abs()
        d, count = int(diff.max()), int((diff > 0).sum())
        if d > worst.get(name, (0, 0, 0))[0]:
            worst[name] = (d, count, m)
        if d > TOLERANCE.get(name, 0):
            failures.append(f"{label} {name}({m!r}): {count} pixels differ, by up to {d}")
    for name, (d, count, m) in worst.items():
        print(f"  {label} {name}: worst {count} pixels by {d} at {m!r}")
    return len(requests)


check_autoaugment_policy()
total = 0
for label, img in images().items():
    check_spaces(img.shape[1], img.shape[2])
    total += check_ops(label, img)
for h, w in [(224, 224), (299, 299), (28, 28), (32, 32)]:
    check_spaces(h, w)
for f in failures[:40]:
    print("FAIL", f)
print(f"torchvision_parity: {total} op runs on 5 images, 3 policy spaces at 8 sizes, "
      f"AutoAugment's ImageNet policy; {len(failures)} failures")
sys.exit(1 if failures else 0)
