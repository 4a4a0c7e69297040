"""PLACEHOLDER being written now; replaced before anything lands."""
def stable_kd_loss(*a, **k):
    raise NotImplementedError
