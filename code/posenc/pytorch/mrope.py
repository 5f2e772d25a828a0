"""A drop-in M-RoPE for the text models of Qwen2-VL, Qwen2.5-VL and Qwen3-VL (``transformers``).

``model.model.language_model.rotary_emb = HFMultimodalRotaryEmbedding(model.config)`` replaces
the rotary embedding of a ``Qwen2VLForConditionalGeneration``,
``Qwen2_5_VLForConditionalGeneration`` or ``Qwen3VLForConditionalGeneration`` (``transformers``
5.24; ``model.language_model.rotary_emb`` for their ``...Model``, ``model.rotary_emb`` for a
``...TextModel``): the attention layers keep their ``apply_rotary_pos_emb`` and take the
``(cos, sin)`` of this module, computed from posenc's float64 tables. The NumPy form of the
same numbers: :mod:`posenc.mrope`.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import keyword_max_len
from ..mrope import check_mrope_section, mrope_pair_axes
from ..rope_scaling import rope_config
from ._tables import _check_x_and_ids, _half_layout
from .rotary import RotaryEmbedding

#: The ``model_type`` of each family this module reproduces, with its layout
#: (``interleaved``) and the ``mrope_section`` ``transformers`` 5.24 takes when the config has
#: none (``Qwen2VLRotaryEmbedding``, ``Qwen2_5_VLRotaryEmbedding``,
#: ``Qwen3VLTextRotaryEmbedding``).
MROPE_FAMILIES = {
    "qwen2_vl": (False, (16, 24, 24)),
    "qwen2_5_vl": (False, (16, 24, 24)),
    "qwen3_vl": (True, (24, 20, 20)),
}


def _read(config) -> tuple[dict, tuple, bool]:
    """``(rope_config(text config), mrope_section, interleaved)`` of a model's config."""
    if isinstance(config, dict):
        raise TypeError("HFMultimodalRotaryEmbedding takes the model's config object "
                        "(model.config, or transformers.AutoConfig.for_model(**config_dict) "
                        "for a config.json dict), as transformers reads it; got a dict")
    text = getattr(config, "text_config", None)
    text = config if text is None else text
    model_type = getattr(text, "model_type", None)
    family = model_type.removesuffix("_text") if isinstance(model_type, str) else None
    if family not in MROPE_FAMILIES:
        raise ValueError(f"HFMultimodalRotaryEmbedding reproduces the M-RoPE of the model types "
                         f"{', '.join(map(repr, MROPE_FAMILIES))} (and their '_text' configs); "
                         f"got a config of model_type {model_type!r}"
                         + ("" if family else " (pass the model's config object, model.config)"))
    interleaved, default_section = MROPE_FAMILIES[family]
    section = getattr(text, "rope_parameters", None) or getattr(text, "rope_scaling", None) or {}
    read = rope_config(text)
    mrope_section = list(section.get("mrope_section") or default_section)
    mrope_section = check_mrope_section(mrope_section, interleaved=interleaved)
    if 2 * sum(mrope_section) != read["head_dim"]:
        raise ValueError(f"the config's mrope_section {list(mrope_section)} has "
                         f"{sum(mrope_section)} pairs, but a head of width "
                         f"{read['head_dim']} has {read['head_dim'] // 2}: they must be equal")
    return read, mrope_section, interleaved


def _check_inputs(x, position_ids) -> torch.Tensor:
    """Check ``forward``'s arguments; return the ids as ``(3, batch, seq_len)`` int64."""
    _check_x_and_ids(x, position_ids, " of shape (3, batch, seq_len) or (batch, seq_len)")
    if position_ids.dim() == 2:
        position_ids = position_ids[None]
    if position_ids.dim() != 3 or position_ids.shape[0] not in (1, 3):
        raise ValueError(f"position_ids must have shape (3, batch, seq_len) (temporal, height, "
                         f"width ids), (1, batch, seq_len) or (batch, seq_len), got shape "
                         f"{tuple(position_ids.shape)}")
    return position_ids.expand(3, -1, -1).long()


class HFMultimodalRotaryEmbedding(nn.Module):
    """The M-RoPE of Qwen2-VL, Qwen2.5-VL and Qwen3-VL's text models, as exact as float32 allows.

    Built from the model's config object as ``transformers`` reads it (the ``text_config``
    of a multimodal config is taken), it replaces the model's
    ``Qwen2VLRotaryEmbedding``, ``Qwen2_5_VLRotaryEmbedding`` or ``Qwen3VLTextRotaryEmbedding``,
    which each text model keeps as ``rotary_emb``::

        model.model.language_model.rotary_emb = HFMultimodalRotaryEmbedding(model.config)

    ``forward(x, position_ids)`` returns ``(cos, sin)`` as those modules do (``transformers``
    5.24): ``position_ids`` of shape ``(3, batch, seq_len)``, the temporal, height and width id
    of every token (``get_rope_index``'s; ``(batch, seq_len)`` is used for all three);
    ``cos`` and ``sin`` of shape ``(batch, seq_len, head_dim)``: pair ``i`` takes the id of
    its axis (:func:`posenc.mrope_pair_axes`, consecutive sections for Qwen2-VL and
    Qwen2.5-VL, interleaved for Qwen3-VL as ``transformers`` does whatever the config's
    ``mrope_interleaved`` says), the ``head_dim / 2`` values written twice for the "half"
    layout, times the attention factor (YaRN's; 1 otherwise): the numbers of
    :func:`posenc.mrope_cos_sin`.

    What differs from ``transformers``' module: the angles are computed in float64 and each
    cosine and sine rounded once to float32 (float64 for float64 ``x``; float16 and bfloat16
    get the float32 values rounded, as ``transformers`` rounds its own), where
    ``transformers`` computes each angle in float32 and is off by up to about ``pos *
    2**-24``; negative ids (left padding) are exact too (``cos(-a) = cos(a)``, ``sin(-a) =
    -sin(a)``); ``"dynamic"`` scaling is stateless, its length the largest ``|id|`` plus
    one (see :class:`HFRotaryEmbedding`); bad input gets a clear error.

    Tables, growth and ``.to()`` / ``.double()``: those of the :class:`RotaryEmbedding` it
    holds (``self.rotary``, ``layout="half"``); the pairs' axes are a buffer that moves with
    the module.

    Args:
        config: the model's ``transformers`` config object (``Qwen2VLConfig``,
            ``Qwen2_5_VLConfig``, ``Qwen3VLConfig`` or their text configs; duck-typed, this
            module does not import ``transformers``). For a ``config.json`` dict, pass
            ``transformers.AutoConfig.for_model(**config_dict)``: the family's config class
            fills in what the dict leaves out (its ``rope_theta``, its ``mrope_section``).
        max_len: keyword only, the positions tabulated up front, an ``int >= 0`` (default
            4096); grown when needed in eager calls.

    Shapes:
        ``forward(x, position_ids)``: ``x`` a floating-point tensor (its dtype and device
        are read), ``position_ids`` an integer tensor ``(3, batch, seq_len)``, ``(1, batch,
        seq_len)`` or ``(batch, seq_len)``, every ``|id| < 2**53``; returns ``(cos, sin)``,
        each ``(batch, seq_len, head_dim)``, of ``x``'s dtype and device.

    Raises:
        TypeError: a dict instead of a config object, a bad ``x`` or ``position_ids``; or
            as :func:`posenc.rope_config`.
        ValueError: a config of another model type (the message lists the ones read), an
            ``mrope_section`` that does not fit the head (its sum must be ``head_dim / 2``),
            ``position_ids`` of a wrong shape; or as :func:`posenc.rope_config`.

    Source: Wang et al. 2024, "Qwen2-VL", section 2.1 (M-RoPE); Bai et al. 2025, "Qwen3-VL
    Technical Report" (interleaved MRoPE); ``transformers.models.qwen2_vl``,
    ``qwen2_5_vl`` and ``qwen3_vl`` (5.24, the interface and the layouts).
    """

    @keyword_max_len
    def __init__(self, config, *, max_len: int = 4096) -> None:
        super().__init__()
        read, section, interleaved = _read(config)
        self.head_dim = read["head_dim"]
        #: ``[n_t, n_h, n_w]``, the pairs of each axis, and whether they are interleaved.
        self.mrope_section, self.interleaved = list(section), interleaved
        #: The :class:`RotaryEmbedding` whose tables give the cosines and sines.
        self.rotary = RotaryEmbedding(read["head_dim"], max_len=max_len, base=read["base"],
                                      layout="half", scaling=read["scaling"])
        #: YaRN's attention factor (``transformers``' ``attention_scaling``), 1.0 otherwise.
        self.attention_scaling = self.rotary.attention_factor
        self.rope_type = "default" if read["scaling"] is None else read["scaling"]["rope_type"]
        axes = torch.from_numpy(mrope_pair_axes(section, interleaved=interleaved))
        self.register_buffer("pair_axes", axes, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):
        """Return ``(cos, sin)`` for ``position_ids``, in ``x``'s dtype (see the class)."""
        ids = _check_inputs(x, position_ids).to(x.device)
        rotary, work = self.rotary, self.rotary._table_dtype(x.dtype)
        magnitude = ids.abs()
        if rotary._dynamic:
            rows = rotary._dynamic_rows(rotary._dynamic_positions(x, 0, magnitude), work)
        else:
            rows = rotary._rows_at(magnitude, work, x.device)  # (3, batch, seq_len, head_dim)
        sign = torch.where(ids < 0, -1.0, 1.0).to(work)[..., None]
        sin, cos = rows[..., 0::2] * sign, rows[..., 1::2]       # (3, batch, seq_len, pairs)
        pick = self.pair_axes.to(x.device).expand(1, *cos.shape[1:])
        cos, sin = cos.gather(0, pick)[0], sin.gather(0, pick)[0]
        return _half_layout(sin, cos, self.attention_scaling, x.dtype)

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, rope_type={self.rope_type!r}, "
                f"mrope_section={self.mrope_section}, interleaved={self.interleaved}")
