"""What every launchable kernel object shares: ``kernel[grid](*args)`` is
``kernel.run(*args, grid=grid, warmup=False)``."""


class KernelInterface:
    """Base of JITFunction, Autotuner and Heuristics."""

    def run(self, *args, grid, warmup, **kwargs):
        raise NotImplementedError

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return self.run(*args, grid=grid, warmup=False, **kwargs)
        return launch


def must_use_result(x, s=True):
    """Marks a function whose result must not be dropped. Accepted for
    compatibility; ctriton does not check it."""
    if isinstance(x, str):  # used as @must_use_result("why")
        return lambda fn: fn
    return x
