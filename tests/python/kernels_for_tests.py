"""Kernels the runtime tests launch or compile (a real file: @jit reads
sources with inspect)."""
from __future__ import annotations

import numpy as np

import ctriton as triton
import ctriton.language as tl


def np_f32(n=64, offset=0):
    return np.zeros(n + offset, np.float32)[offset:]


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def take_int(x_ptr, i):
    tl.store(x_ptr, i)


@triton.jit(do_not_specialize=["i"])
def take_int_nospec(x_ptr, i):
    tl.store(x_ptr, i)


@triton.jit(do_not_specialize_on_alignment=["i"])
def take_int_noalign(x_ptr, i):
    tl.store(x_ptr, i)


@triton.jit
def noop(x_ptr, n, f, flag, BLOCK: tl.constexpr):
    pass
