"""Host time per launch of a no-op kernel on the CPU backend (a hit in the
variant cache: bind, key, lookup, pack, launch).

    python3 bench/launch_overhead_cpu.py
"""
import time

import numpy as np

import ctriton as triton
import ctriton.language as tl


@triton.jit
def noop(x_ptr, n, f, flag, BLOCK: tl.constexpr):
    pass


def main():
    x = np.zeros(64, np.float32)
    launch = noop[(1,)]
    for _ in range(1000):
        launch(x, 16, 1.0, True, BLOCK=16)
    reps = 100000
    t = time.perf_counter()
    for _ in range(reps):
        launch(x, 16, 1.0, True, BLOCK=16)
    print(f"host time per launch (CPU backend, no-op): "
          f"{(time.perf_counter() - t) / reps * 1e6:.2f} us")


if __name__ == "__main__":
    main()
