"""Tasks: each turns the composed Hydra config into a :class:`~softmax_zoo.tasks.base.Task`."""
