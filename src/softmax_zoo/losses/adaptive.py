"""PLACEHOLDER being written now; replaced before anything lands."""
def AdaptiveSoftmaxHead(*a, **k):
    raise NotImplementedError
def optimal_cutoffs(*a, **k):
    raise NotImplementedError
