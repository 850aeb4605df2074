"""Helpers for tests that read PTX text."""
import re


def ptx_loops(ptx):
    """The PTX text of each loop: from a label to the branch back to it."""
    out = []
    for m in re.finditer(r"^(\$L__BB\d+_\d+):", ptx, re.M):
        back = re.search(r"\bbra(\.uni)?\s+" + re.escape(m.group(1)) + ";", ptx[m.end():])
        if back:
            out.append(ptx[m.end():m.end() + back.end()])
    return out
