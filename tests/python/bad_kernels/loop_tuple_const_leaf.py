# expect: variable 'acc' holds a compile-time value and cannot be reassigned inside a runtime loop
# at: 12:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    acc = (tl.zeros([BLOCK], tl.float32), "a")
    for i in range(n):
        acc = (acc[0] + 1, "b")
