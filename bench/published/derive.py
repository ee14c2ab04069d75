#!/usr/bin/python3
"""Derives the a100, h100 and h200 device profiles from their spec sheets and
the knobs fitted to the V100's published measurements (bench/published/README.md,
"Derived profiles").

    /usr/bin/python3 bench/published/derive.py [--profiles DIR] [--check]

No measurement of these GPUs went into them: what the V100 fit learned about
how cuDNN's kernels use an SM, the memory system and each other (the
efficiency, sharing and per-shape knobs, whole waves) is carried over; the
rest comes from each GPU's spec sheet (SMs, peaks, bandwidth, L2) or stays an
estimate for today's software stack (the per-call overheads: the V100's were
fitted to a 2020 host with CUDA 10.2 and cuDNN 7.6). --check exits 1 when
the profiles in DIR differ from what it would write (a test runs it).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Carried over from the fitted v100: how kernels use a device, not its size.
FROM_V100 = ["compute_efficiency", "memory_efficiency", "blocks_per_sm", "outputs_per_block",
             "max_outputs_per_block", "split_k_length", "concurrency_interference",
             "cache_contention", "whole_waves", "winograd_speedup", "asymmetric_conv_efficiency"]

# Spec sheets (SXM parts; dense FP32, TF32, FP16 and BF16 peaks at boost
# clock: NVIDIA's H100 Tensor Core GPU datasheet, FP16/BF16 tensor 989.4 and
# TF32 494.7 TFLOPS dense on the SXM5 part, the H200 the same compute; the
# A100 Tensor Core GPU datasheet, FP16/BF16 tensor 312 and TF32 156) and the
# estimates that no V100 measurement informs: per-call overheads of a current
# driver and host, and the TF32 tensor-core efficiency (the V100 has none).
H100 = {
    "description": "NVIDIA H100 SXM5 80GB",
    "sm_count": 132, "peak_fp32_tflops": 67.0, "peak_tf32_tflops": 494.7,
    "peak_fp16_tflops": 989.4, "peak_bf16_tflops": 989.4,
    "mem_bandwidth_gbs": 3350, "l2_cache_mb": 50.0, "max_concurrent_kernels": 128,
    "launch_overhead_us": 3.0, "event_sync_overhead_us": 2.0, "host_launch_us": 4.0,
    "host_sync_us": 6.0, "tensor_core_efficiency": 0.35,
}
DEVICES = {
    "a100": {
        "description": "NVIDIA A100 SXM4 80GB",
        "sm_count": 108, "peak_fp32_tflops": 19.5, "peak_tf32_tflops": 156.0,
        "peak_fp16_tflops": 312.0, "peak_bf16_tflops": 312.0,
        "mem_bandwidth_gbs": 2039, "l2_cache_mb": 40.0, "max_concurrent_kernels": 128,
        "launch_overhead_us": 3.5, "event_sync_overhead_us": 2.5, "host_launch_us": 5.0,
        "host_sync_us": 8.0, "tensor_core_efficiency": 0.4,
    },
    "h100": H100,
    # The H100's compute with HBM3e.
    "h200": dict(H100, description="NVIDIA H200 SXM 141GB", mem_bandwidth_gbs=4800),
}

# The order of the fields in the written files (that of the shipped ones).
ORDER = ["name", "description", "sm_count", "peak_fp32_tflops", "peak_tf32_tflops",
         "peak_fp16_tflops", "peak_bf16_tflops",
         "mem_bandwidth_gbs", "launch_overhead_us", "event_sync_overhead_us", "host_launch_us",
         "host_sync_us", "max_concurrent_kernels", "compute_efficiency", "tensor_core_efficiency",
         "memory_efficiency", "blocks_per_sm", "outputs_per_block", "max_outputs_per_block",
         "split_k_length", "concurrency_interference", "l2_cache_mb", "cache_contention", "whole_waves",
         "winograd_speedup", "asymmetric_conv_efficiency"]


def derive(v100, name):
    spec = dict(DEVICES[name])
    profile = {"name": name}
    profile.update(spec)
    profile["description"] = (spec["description"] + " (spec-sheet peaks, dense, from NVIDIA's datasheet; efficiency, sharing and per-shape "
                              "knobs carried over from the fitted v100, not fitted to measurements of this "
                              "GPU; overheads estimated: bench/published/derive.py)")
    for field in FROM_V100:
        profile[field] = v100[field]
    missing = [f for f in ORDER if f not in profile]
    if missing:
        raise SystemExit(f"derive.py: {name} lacks {missing}")
    return {f: profile[f] for f in ORDER}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", default=os.path.join(REPO, "device_profiles"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    with open(os.path.join(a.profiles, "v100.json")) as f:
        v100 = json.load(f)
    stale = []
    for name in DEVICES:
        text = json.dumps(derive(v100, name), indent=2) + "\n"
        path = os.path.join(a.profiles, name + ".json")
        if a.check:
            with open(path) as f:
                if f.read() != text:
                    stale.append(path)
            continue
        with open(path, "w") as f:
            f.write(text)
    if stale:
        print("derive.py: not derived from the fitted v100 as written: " + ", ".join(stale) +
              " (run bench/published/derive.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
