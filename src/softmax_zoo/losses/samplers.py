"""PLACEHOLDER being written now; replaced before anything lands."""
def Sampler(*a, **k):
    raise NotImplementedError
def SoftmaxSampler(*a, **k):
    raise NotImplementedError
def UniformSampler(*a, **k):
    raise NotImplementedError
def UnigramSampler(*a, **k):
    raise NotImplementedError
