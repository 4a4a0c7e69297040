"""PLACEHOLDER being written now; replaced before anything lands."""
def SampledSoftmaxHead(*a, **k):
    raise NotImplementedError
