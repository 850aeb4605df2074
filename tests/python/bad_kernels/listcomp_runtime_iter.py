# expect: a list comprehension must iterate over tl.static_range(), range() with constexpr bounds, or a tuple
# at: 11:21
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"x_ptr": "*fp32"}


@triton.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    y = [i for i in tl.load(x_ptr + tl.arange(0, BLOCK))]
