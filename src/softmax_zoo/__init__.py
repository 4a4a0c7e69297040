"""softmax_zoo: softmax variants as swappable output heads, and the pipelines that reproduce their papers."""

__version__ = "0.1.0"
