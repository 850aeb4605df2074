# expect: loop-carried variable acc holds a tuple of 2 elements before the loop and a tuple of 3
# at: 12:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    acc = (tl.zeros([BLOCK], tl.float32), 0)
    for i in range(n):
        acc = (acc[0] + 1, acc[1] + i, 2)
