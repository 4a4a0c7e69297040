"""PLACEHOLDER being written now; replaced before anything lands."""
def StableSoftmaxHead(*a, **k):
    raise NotImplementedError
def stable_cross_entropy(*a, **k):
    raise NotImplementedError
