"""ctriton.tools (``triton.tools``): host-side helpers."""
