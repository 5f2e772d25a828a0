"""A drop-in rotary embedding for Hugging Face ``transformers`` models (Llama, Qwen2, Mistral...).

``model.model.rotary_emb = posenc.pytorch.HFRotaryEmbedding(model.config)`` is the whole
change: the model's attention layers keep their own ``apply_rotary_pos_emb`` and take the
``(cos, sin)`` of this module, computed from posenc's float64 tables.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import keyword_max_len
from ..rope_scaling import rope_config
from .rotary import RotaryEmbedding


class HFRotaryEmbedding(nn.Module):
    """The rotary embedding of a ``transformers`` model, as exact as float32 allows.

    Built from the model's config (read by :func:`posenc.rope_config`, as ``transformers`` 5
    reads it: ``rope_theta``, ``head_dim``, ``partial_rotary_factor`` and the ``"linear"``,
    ``"dynamic"``, ``"yarn"`` and ``"llama3"`` scalings), it replaces the model's own rotary
    embedding (``LlamaRotaryEmbedding``, ``Qwen2RotaryEmbedding``, ...)::

        model.model.rotary_emb = posenc.pytorch.HFRotaryEmbedding(model.config)

    ``forward(x, position_ids)`` returns ``(cos, sin)`` as that module does (``transformers``
    5.24): each of shape ``position_ids.shape + (head_dim,)``, e.g. ``(batch, seq_len,
    head_dim)``, of ``x``'s dtype and device, the ``head_dim / 2`` angles of a position
    written twice (``torch.cat((angles, angles), -1)``) and multiplied by the attention
    factor (YaRN's; 1 otherwise), for ``transformers``' ``apply_rotary_pos_emb``, which pairs
    coordinate ``i`` with ``i + head_dim / 2``: the "half" layout of GPT-NeoX. RoFormer's
    paper pairs ``2i`` with ``2i + 1`` ("interleaved", :class:`RotaryEmbedding`'s default);
    weights trained with one layout give other scores with the other, so this module, built
    for ``transformers`` models, is always "half".

    What differs from ``transformers``' module:

    - Precision: ``transformers`` computes each angle ``pos * inv_freq`` in float32, so its
      cosines and sines are off by up to about ``pos * 2**-24`` (measured on Llama 3.1's
      head, the 64 positions below: 2.3e-3 at 32k, 9.0e-3 at 131k, 7.5e-2 at ``2**20``). Here the angles are computed in float64 from the float64
      frequencies of :func:`posenc.rope_frequencies` and each cosine and sine is rounded once
      to float32 (float64 for float64 ``x``): exact to float32 at any position up to ``2**20``
      and far beyond. For float16 and bfloat16 ``x`` the float32 values are rounded to
      ``x``'s dtype, as ``transformers`` rounds its own.
    - ``"dynamic"`` is stateless: the base of each call follows that call's length (the
      largest position in ``position_ids``, over the batch, plus one), where ``transformers``'
      module keeps the frequencies of the longest sequence it has seen until a sequence
      shorter than ``max_position_embeddings`` resets them (``transformers`` issue #25104):
      a short sequence run after a long one gets other logits there, the same here.
    - Bad input gets a clear error (``TypeError`` or ``ValueError``), e.g. a config posenc
      cannot read (:func:`posenc.rope_config`), float positions, or positions past ``2**53``.

    Tables, growth, ``torch.compile`` and ``torch.export``: those of the
    :class:`RotaryEmbedding` it holds (``self.rotary``, ``layout="half"``), which grows its
    table in eager calls and computes rows past it inside compiled graphs.

    Args:
        config: a ``transformers.PretrainedConfig`` or a ``config.json`` dict (see
            :func:`posenc.rope_config`; the module does not import ``transformers``).
        max_len: keyword only, the positions tabulated up front, an ``int >= 0`` (default
            4096); grown when needed in eager calls.

    Shapes:
        ``forward(x, position_ids)``: ``x`` a floating-point tensor (its dtype and device
        are read, e.g. the hidden states ``(batch, seq_len, hidden_size)``),
        ``position_ids`` an integer tensor, e.g. ``(batch, seq_len)``, every entry in
        ``[0, 2**53)``; returns ``(cos, sin)``, each ``position_ids.shape + (head_dim,)``,
        dtype and device of ``x``.

    Raises:
        TypeError, ValueError: ``config`` cannot be read (:func:`posenc.rope_config`), or a
            bad ``x`` or ``position_ids``; a ``layer_type`` argument (per-layer rope sections,
            Gemma 3) is a ``ValueError``.

    Source: Su et al. 2021, RoFormer (the rotation); Black et al. 2022, GPT-NeoX (the half
    layout); ``transformers.models.llama.modeling_llama.LlamaRotaryEmbedding`` (5.24, the
    interface); the scalings: :func:`posenc.rope_frequencies`.
    """

    @keyword_max_len
    def __init__(self, config, *, max_len: int = 4096) -> None:
        super().__init__()
        read = rope_config(config)
        self.head_dim = read["head_dim"]
        #: The :class:`RotaryEmbedding` whose tables give the cosines and sines.
        self.rotary = RotaryEmbedding(read["head_dim"], max_len=max_len, base=read["base"],
                                      layout="half", scaling=read["scaling"])
        #: YaRN's attention factor (``transformers``' ``attention_scaling``), 1.0 otherwise.
        self.attention_scaling = self.rotary.attention_factor
        self.rope_type = "default" if read["scaling"] is None else read["scaling"]["rope_type"]

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor, layer_type=None):
        """Return ``(cos, sin)`` for ``position_ids``, in ``x``'s dtype (see the class)."""
        if layer_type is not None:
            raise ValueError(f"HFRotaryEmbedding has one rope section for every layer; got "
                             f"layer_type={layer_type!r} (per-layer sections are not supported)")
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"x must be a floating-point torch.Tensor (its dtype and device are "
                            f"read), got {type(x).__name__}"
                            + (f" of dtype {x.dtype}" if isinstance(x, torch.Tensor) else ""))
        if (not isinstance(position_ids, torch.Tensor) or position_ids.dtype == torch.bool
                or position_ids.is_floating_point() or position_ids.is_complex()):
            raise TypeError("position_ids must be an integer torch.Tensor, e.g. (batch, "
                            "seq_len), got " + (f"a tensor of dtype {position_ids.dtype}"
                                                if isinstance(position_ids, torch.Tensor)
                                                else type(position_ids).__name__))
        rotary = self.rotary
        work = rotary._table_dtype(x.dtype)
        positions = position_ids.long()
        if rotary._dynamic:
            rows = rotary._dynamic_rows(rotary._dynamic_positions(x, 0, positions), work)
        else:
            rows = rotary._rows_at(positions, work, x.device)
        sin, cos = rows[..., 0::2], rows[..., 1::2]
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        if self.attention_scaling != 1.0:
            cos, sin = cos * self.attention_scaling, sin * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, rope_type={self.rope_type!r}"
