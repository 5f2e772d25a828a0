"""An independent reference for the tests: the formula evaluated with mpmath at 50 digits,
and the small checks the test files share (the PyTorch ones import torch when called)."""

import re

import mpmath
import numpy as np


def exact_encoding(positions, d_model, base=10000):
    """PE[pos, j] from the formula of Vaswani et al. (2017, 3.5), in 50-digit arithmetic.

    Written from the paper's two equations, not from the package: column j uses
    exponent 2 * floor(j / 2) / d_model, sine for even j and cosine for odd j.
    """
    with mpmath.workdps(50):
        base = mpmath.mpf(base)
        rows = []
        for pos in positions:
            row = []
            for j in range(d_model):
                angle = mpmath.mpf(pos) / base ** (mpmath.mpf(2 * (j // 2)) / d_model)
                row.append(mpmath.sin(angle) if j % 2 == 0 else mpmath.cos(angle))
            rows.append(row)
        return np.array([[float(v) for v in row] for row in rows]).reshape(len(rows), d_model)


def exactly(message):
    """A regex for ``pytest.raises(match=...)`` that matches the whole message and nothing else."""
    return "^" + re.escape(message) + "$"


def whole_line(message):
    """A regex matching ``message`` as a whole line: Keras wraps a layer's error message in
    lines of its own (and bold escapes) but keeps the message on its own line."""
    return r"(?m)^(\x1b\[1m)?" + re.escape(message) + r"(\x1b\[0m)?$"


def assert_nearest(got, exact):
    """Assert that every entry of ``got`` (NumPy float array) is a value of its dtype nearest to
    ``exact`` (float64): neither neighbour in its dtype is strictly closer."""
    error = np.abs(got.astype(np.float64) - exact)
    for direction in (np.inf, -np.inf):
        neighbour = np.nextafter(got, np.full_like(got, direction))
        assert np.all(error <= np.abs(neighbour.astype(np.float64) - exact))


def assert_nearest_torch(got, exact):
    """Assert that every entry of the tensor ``got`` (any floating dtype, bfloat16 included) is
    a value of its dtype nearest to the float64 tensor ``exact``: no neighbour is closer."""
    import torch

    error = (got.double() - exact).abs()
    for direction in (float("inf"), float("-inf")):
        neighbour = torch.nextafter(got, torch.full_like(got, direction))
        assert torch.all(error <= (neighbour.double() - exact).abs())


def randn(*shape, seed=0, dtype=None):
    """A standard normal torch tensor of ``shape`` drawn from its own generator seeded with
    ``seed`` (float32 unless ``dtype`` says otherwise); the global generator is untouched."""
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=dtype or torch.float32)


def llama_config(head_dim, base, scaling):
    """A Hugging Face ``LlamaConfig`` (transformers imported when called) whose
    ``rope_parameters`` are posenc's ``scaling`` with ``rope_theta=base``. transformers reads the
    original length of "dynamic" from ``max_position_embeddings``; for the other types the
    longer length is ``factor`` times the original, as in the models' configs."""
    from transformers import LlamaConfig

    original = scaling.get("original_max_position_embeddings", 2048)
    dynamic = scaling["rope_type"] == "dynamic"
    parameters = {key: value for key, value in scaling.items()
                  if not (dynamic and key == "original_max_position_embeddings")}
    return LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                       num_key_value_heads=4,
                       max_position_embeddings=original if dynamic else int(original * scaling["factor"]),
                       rope_parameters={**parameters, "rope_theta": base})
