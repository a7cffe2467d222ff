#!/usr/bin/env python3
"""Installs the CUDA host libraries the tests load (no GPU needed) into a target folder, once.

CUPTI 12.9.79 was checked to answer the Profiler Host API for TU102, GA100, GA102, AD102 and GH100.
"""
import subprocess
import sys
from pathlib import Path

WHEELS = ["nvidia-cuda-cupti-cu12==12.9.79", "nvidia-cuda-nvrtc-cu12==12.9.86"]


def main() -> int:
    target = Path(sys.argv[1] if len(sys.argv) > 1 else Path.home() / ".cache/gpumodel/wheels")
    stamp = target / ".installed"
    want = "\n".join(WHEELS)
    if stamp.exists() and stamp.read_text() == want:
        return 0
    target.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--upgrade", "--target", str(target), *WHEELS]
    print("installing CUDA host libraries:", " ".join(WHEELS), file=sys.stderr)
    subprocess.run(cmd, check=True)
    stamp.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
