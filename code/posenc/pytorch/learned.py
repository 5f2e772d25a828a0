"""Learned absolute positions for PyTorch: a trained vector per position, as in BERT and GPT-2."""

from __future__ import annotations

import torch
from torch import nn

from .._validate import check_int, keyword_max_len
from ._tables import _check_sequence, _check_tensor_offset, _concrete, _tracing


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position to a batch of embeddings (batch first), as BERT and GPT-2 do.

    Position ``pos`` owns row ``pos`` of an ``nn.Embedding(max_len, d_model)`` table, trained
    with the rest of the model. The table has no row past ``max_len - 1``: unlike the
    sinusoidal :class:`posenc.pytorch.PositionalEncoding`, it cannot grow, and positions it
    never saw in training keep their initial random values, so a longer input is an error.

    Args:
        d_model: width of the embeddings, an ``int >= 1``.
        max_len: keyword only and required (``LearnedPositionalEmbedding(d_model,
            max_len=...)``), the number of positions the table holds, an ``int >= 1``.
        dropout: keyword only, probability of the dropout applied to the sum, in ``[0, 1]``; active only
            in training mode.

    Initialisation: normal with mean 0 and standard deviation 0.02, the N(0, 0.02) of
    Radford et al. 2018 (also ``initializer_range=0.02`` in the configurations of BERT
    and GPT-2).

    Shapes:
        ``forward(x, offset=0)``: ``x`` of shape ``(..., seq_len, d_model)``, any number of
        leading (batch) dimensions, floating-point dtype. The result has the shape, dtype and
        device of ``x``: ``dropout(x + E[offset : offset + seq_len])``, the same contract as
        :class:`posenc.pytorch.PositionalEncoding`. The table ``E``
        (``module.embedding.weight``) is a parameter in ``state_dict``; it is converted to
        the dtype of ``x`` before the sum.

    Shipping paths (each checked by the project's tests on a fresh module, float32, CPU):
    ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back end (no
    graph break), ``torch.export.export`` (strict and non-strict) with a dynamic ``seq_len``,
    ``torch.onnx.export`` with the dynamo and the legacy exporters (the legacy one makes
    ``offset`` a graph input), run by onnxruntime within 1e-5 of eager, and
    ``torch.jit.trace``. A learned table has no row past ``max_len - 1`` in any graph: with a
    traced length the graph checks ``offset + seq_len <= max_len`` when it runs.

    Raises:
        TypeError, ValueError: bad constructor arguments (``ValueError`` from ``nn.Dropout``
            for a probability outside ``[0, 1]``; a positional ``max_len``, as in the old
            order ``LearnedPositionalEmbedding(max_len, d_model)``, is a ``TypeError`` saying
            what to write), or a bad input to :meth:`forward`.

    Source: Radford et al. 2018, "Improving Language Understanding by Generative
    Pre-Training" (GPT), section 4.1 (learned position embeddings instead of sinusoids);
    Devlin et al. 2019 (BERT), figure 2 (position embeddings summed with the token ones).
    """

    @keyword_max_len(first=True)  # the old order was (max_len, d_model)
    def __init__(self, d_model: int, *, max_len: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model, minimum=1)
        self.max_len = check_int("max_len", max_len, minimum=1)
        self.embedding = nn.Embedding(self.max_len, self.d_model)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=0.02)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, offset=0) -> torch.Tensor:
        """Return ``dropout(x + E[offset : offset + seq_len])``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, d_model)`` (batch first), on
                the device of the module's parameters.
            offset: position of ``x``'s first row, an ``int >= 0`` or a scalar integer
                tensor (inside a compiled, exported or traced graph a tensor offset is used
                without a value check: keep ``offset + seq_len <= max_len``).

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, or ``offset`` is not an integer
                (or integer tensor).
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``d_model``, ``offset`` is negative or not a scalar, or
                ``offset + seq_len > max_len``.
        """
        _check_sequence("x", x, "d_model", self.d_model)
        device = self.embedding.weight.device
        seq_len = x.shape[-2]
        if isinstance(offset, torch.Tensor):
            offset = _check_tensor_offset(offset)
            if _tracing() or offset.device.type == "meta":  # no host sync: gather
                positions = offset.to(device) + torch.arange(seq_len, device=device)
                return self.dropout(x + self.embedding(positions).to(x.dtype))
            offset = int(offset)
        if torch.compiler.is_compiling():  # torch.compile, torch.export: a symbolic check
            end = offset + seq_len
            if torch.compiler.is_exporting():  # strict export takes no message (torch 2.13)
                torch._check(end <= self.max_len)
            else:  # fullgraph needs a message built from constants only
                message = (f"offset + seq_len runs past max_len={self.max_len}: a learned "
                           f"positional embedding has rows for positions 0 to "
                           f"{self.max_len - 1} only")
                torch._check(end <= self.max_len, lambda: message)
        else:
            offset = check_int("offset", offset)
            end = offset + _concrete(seq_len)
            if end > self.max_len:
                raise ValueError(
                    f"positions {offset} to {end - 1} (offset={offset}, seq_len={end - offset}) "
                    f"run past max_len={self.max_len}: a learned positional embedding has "
                    f"rows for positions 0 to {self.max_len - 1} only")
        positions = offset + torch.arange(seq_len, device=device)
        return self.dropout(x + self.embedding(positions).to(x.dtype))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"

