"""Diagnostics run on a fixed checkpoint (no training): :mod:`.sampler_bias`."""
