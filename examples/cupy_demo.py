#!/usr/bin/env python3
"""CuPy arrays of a few hundred MB, computed on the GPU and checked against NumPy.

CuPy allocates through cudaMalloc (its memory pool) and launches its kernels through the
driver API, a different path from PyTorch's; under uvmrun every array is managed memory.
Prints one line per check, then OK or FAIL; exits 1 on any mismatch.
"""

import sys

import cupy as cp
import numpy as np

MATRIX_SIZE = 2048  # three float64 matrices of 32 MiB each (the CPU check stays quick)
VECTOR_LENGTH = 50_000_000  # one float64 vector of 400 MB
SEED = 20261129


def close(name, gpu_value, cpu_value, rtol):
    gpu_value = cp.asnumpy(gpu_value)
    matches = np.allclose(gpu_value, cpu_value, rtol=rtol, atol=rtol * float(np.max(np.abs(cpu_value))))
    worst = float(np.max(np.abs(gpu_value - cpu_value)))
    print(f"{name}: {'ok' if matches else 'MISMATCH'} (largest difference {worst:.3e})", flush=True)
    return matches


def main():
    random = np.random.default_rng(SEED)
    a_host = random.standard_normal((MATRIX_SIZE, MATRIX_SIZE))
    b_host = random.standard_normal((MATRIX_SIZE, MATRIX_SIZE))
    v_host = random.uniform(-1.0, 1.0, VECTOR_LENGTH)

    a = cp.asarray(a_host)
    b = cp.asarray(b_host)
    v = cp.asarray(v_host)
    product = a @ b
    scaled = cp.tanh(v) * 0.5 + cp.sin(v)
    cp.cuda.Device().synchronize()
    print(f"device arrays: {(a.nbytes + b.nbytes + product.nbytes + v.nbytes + scaled.nbytes) / 2**20:.0f} MiB",
          flush=True)

    product_host = a_host @ b_host
    scaled_host = np.tanh(v_host) * 0.5 + np.sin(v_host)
    # Tolerances allow for a different summation order and last-bit differences of the
    # math functions; a page with lost or stale data is off by far more.
    results = [
        close("matmul", product, product_host, 1e-9),
        close("row sums of the product", product.sum(axis=1), product_host.sum(axis=1), 1e-9),
        close("elementwise tanh/sin", scaled, scaled_host, 1e-12),
        close("sum of squares", cp.sum(scaled * scaled), np.sum(scaled_host * scaled_host), 1e-9),
        close("maximum", cp.max(scaled), np.max(scaled_host), 1e-12),
        close("argmax", cp.argmax(scaled), np.argmax(scaled_host), 0.0),
    ]
    passed = all(results)
    print("OK" if passed else "FAIL", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
