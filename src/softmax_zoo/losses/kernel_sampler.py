"""PLACEHOLDER being written now; replaced before anything lands."""
def QuadraticKernelSampler(*a, **k):
    raise NotImplementedError
