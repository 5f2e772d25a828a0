"""A drop-in rotary embedding for Hugging Face ``transformers`` models (Llama, Qwen2, Gemma 3...).

``posenc.pytorch.replace_rotary(model)`` is the whole change: it finds every rotary module of
the model wherever its family keeps it (``model.model.rotary_emb``,
``model.gpt_neox.rotary_emb``, ``model.model.language_model.rotary_emb``...) and puts an
:class:`HFRotaryEmbedding` in its place; the model's attention layers keep their own
``apply_rotary_pos_emb`` and take the ``(cos, sin)`` of this module, computed from posenc's
float64 tables.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import keyword_max_len
from ..hf_config import rope_config, rope_layer_types
from .mrope import HFMultimodalRotaryEmbedding
from ._tables import _check_x_and_ids, _half_layout
from .rotary import RotaryEmbedding


class HFRotaryEmbedding(nn.Module):
    """The rotary embedding of a ``transformers`` model, as exact as float32 allows.

    Built from the model's config (read by :func:`posenc.rope_config`, as ``transformers`` 5
    reads it: ``rope_theta``, ``head_dim``, ``partial_rotary_factor`` and the ``"linear"``,
    ``"dynamic"``, ``"yarn"`` and ``"llama3"`` scalings; a multimodal wrapper's
    ``text_config``), it replaces the model's own rotary embedding (``LlamaRotaryEmbedding``,
    ``GPTNeoXRotaryEmbedding``, ``Gemma3RotaryEmbedding``, ...), which
    :func:`replace_rotary` finds and replaces::

        replaced = posenc.pytorch.replace_rotary(model)

    Where the family keeps it (a line such as ``model.model.rotary_emb = ...`` that names the
    wrong attribute changes nothing, silently): ``model.model.rotary_emb`` (Llama, Qwen,
    Mistral, Gemma, DeepSeek...), ``model.gpt_neox.rotary_emb`` (GPT-NeoX, Pythia),
    ``model.model.language_model.rotary_emb`` (Mistral 3, Gemma 3 with images).

    Per-layer configs (Gemma 3, OLMo 3: one rope section per layer type, e.g. a ``rope_theta``
    of 10,000 for the sliding-window layers and 1,000,000 for the global ones): one table
    per layer type, and ``forward(x, position_ids, layer_type)`` as ``transformers``' module.

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
      to float32 (float64 for float64 ``x``): within one float32 rounding (3.0e-8) of the
      exact values of those frequencies up to position ``2**26``, and about ``pos *
      2**-54`` past ``2**29`` (the float64 angle's own rounding; see
      :class:`RotaryEmbedding`). For float16 and bfloat16 ``x`` the float32 values are
      rounded to ``x``'s dtype, as ``transformers`` rounds its own.
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

    dtype and device: the tables follow the input (``x``'s dtype and device). Float32 and
    float64 tables are prepared when the module is built (on ``device``) and again when it is
    moved (``.to()``, ``.double()``, ``.cuda()``, with the model), so a graph of either dtype
    compiles (``torch.compile(fullgraph=True)``) in any order of building and moving; on
    another device, build it there (``device=``) or move it with the model.

    Args:
        config: a ``transformers.PretrainedConfig`` or a ``config.json`` dict (see
            :func:`posenc.rope_config`; a wrapper's ``text_config`` is read); for a dict the
            module imports ``transformers`` if it is installed, to read it as it does.
        max_len: keyword only, the positions tabulated up front, an ``int >= 0`` (default
            4096); grown when needed in eager calls.
        device: keyword only, the device of the tables prepared up front (default: the CPU).

    Shapes:
        ``forward(x, position_ids)``: ``x`` a floating-point tensor (its dtype and device
        are read, e.g. the hidden states ``(batch, seq_len, hidden_size)``),
        ``position_ids`` an integer tensor, e.g. ``(batch, seq_len)``, every entry in
        ``[0, 2**53)``; returns ``(cos, sin)``, each ``position_ids.shape + (head_dim,)``,
        dtype and device of ``x``.

    Raises:
        TypeError, ValueError: ``config`` cannot be read (:func:`posenc.rope_config`), or a
            bad ``x`` or ``position_ids``; a ``layer_type`` the config does not have (or any
            for a config with one section, or none for a per-layer one) is a ``ValueError``.

    Source: Su et al. 2021, RoFormer (the rotation); Black et al. 2022, GPT-NeoX (the half
    layout); ``transformers.models.llama.modeling_llama.LlamaRotaryEmbedding`` (5.24, the
    interface); the scalings: :func:`posenc.rope_frequencies`.
    """

    @keyword_max_len
    def __init__(self, config, *, max_len: int = 4096, device=None) -> None:
        super().__init__()
        if _rope_kind(_text_config(config)) == "mrope":
            raise ValueError("the config's rope parameters have mrope_section (M-RoPE: "
                             "Qwen2-VL, Qwen2.5-VL, Qwen3-VL): its positions have three axes, "
                             "which this one-axis drop-in would silently ignore: use "
                             "posenc.pytorch.HFMultimodalRotaryEmbedding, or replace_rotary(model)")
        #: The layer types with a rope section of their own (``()``: one for every layer).
        self.layer_types = rope_layer_types(config)
        rotaries = {}
        for layer_type in self.layer_types or [None]:
            read = rope_config(config, layer_type=layer_type)
            rotaries[layer_type or "all"] = RotaryEmbedding(
                read["head_dim"], max_len=max_len, base=read["base"], layout="half",
                scaling=read["scaling"])
        #: The :class:`RotaryEmbedding` of every layer type (``"all"`` for one section).
        self.rotaries = nn.ModuleDict(rotaries)
        #: The one :class:`RotaryEmbedding` of a config with one section (else ``None``).
        self.rotary = None if self.layer_types else self.rotaries["all"]
        first = next(iter(self.rotaries.values()))
        self.head_dim = first.head_dim
        #: YaRN's attention factor (``transformers``' ``attention_scaling``), 1.0 otherwise
        #: (of the first layer type for per-layer configs).
        self.attention_scaling = first.attention_factor
        self.rope_type = "default" if first.scaling is None else first.scaling["rope_type"]
        for layer_type in self.layer_types:  # transformers' names of the per-layer values
            setattr(self, f"{layer_type}_attention_scaling",
                    self.rotaries[layer_type].attention_factor)
        if device is not None:
            self.to(device)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor, layer_type=None):
        """Return ``(cos, sin)`` for ``position_ids``, in ``x``'s dtype (see the class)."""
        if self.layer_types:
            if layer_type not in self.layer_types:
                raise ValueError(f"this config has one rope section per layer type "
                                 f"({', '.join(self.layer_types)}): pass layer_type= one of "
                                 f"them, got {layer_type!r}")
            rotary = self.rotaries[layer_type]
        elif layer_type is not None:
            raise ValueError(f"this config has one rope section for every layer; got "
                             f"layer_type={layer_type!r}")
        else:
            rotary = self.rotary
        _check_x_and_ids(x, position_ids, ", e.g. (batch, seq_len)")
        work = rotary._table_dtype(x.dtype)
        positions = position_ids.long()
        if rotary._dynamic:
            rows = rotary._dynamic_rows(rotary._dynamic_positions(x, 0, positions), work)
        else:
            rows = rotary._rows_at(positions, work, x.device)
        sin, cos = rows[..., 0::2], rows[..., 1::2]
        return _half_layout(sin, cos, rotary.attention_factor, x.dtype)

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, rope_type={self.rope_type!r}"
                + (f", layer_types={self.layer_types!r}" if self.layer_types else ""))


#: posenc's drop-in for each kind of rotary embedding :func:`replace_rotary` finds: ``"rope"``
#: (one position per token) and ``"mrope"`` (M-RoPE's three position axes, the config's
#: ``mrope_section``: Qwen2-VL, Qwen2.5-VL, Qwen3-VL).
DROP_INS: dict[str, type] = {"rope": HFRotaryEmbedding, "mrope": HFMultimodalRotaryEmbedding}


def _text_config(config):
    if isinstance(config, dict):
        return config.get("text_config") or config
    text = getattr(config, "get_text_config", None)
    return text(decoder=True) if callable(text) else getattr(config, "text_config", None) or config


def _rope_kind(config) -> str:
    def get(name):
        return config.get(name) if isinstance(config, dict) else getattr(config, name, None)
    section = get("rope_parameters") or get("rope_scaling")
    sections = [section] if isinstance(section, dict) else []
    sections += [value for value in (section or {}).values() if isinstance(value, dict)]
    return "mrope" if any("mrope_section" in part for part in sections) else "rope"


def _rotary_modules(model: nn.Module, text) -> list[tuple[str, nn.Module]]:
    """The text rotary modules of a ``transformers`` model: class name ending in
    ``RotaryEmbedding``, built from the model's text config (vision towers' rotaries, built
    from their own configs, are left alone)."""
    found = []
    for name, module in model.named_modules():
        if (type(module).__name__.endswith("RotaryEmbedding")
                and not isinstance(module, HFRotaryEmbedding)
                and getattr(module, "config", None) is not None
                and (module.config is text
                     or getattr(module.config, "model_type", None) == text.model_type)):
            found.append((name, module))
    return found


def _check_same(name: str, theirs: nn.Module, ours: nn.Module, device, kind: str) -> None:
    """Refuse a drop-in whose (cos, sin) differ from the module it replaces at positions 0 to
    31 (where float32 angles are exact to 2e-6): another layout or width (Cohere's interleaved
    pairs, GPT-OSS's half-width tables) would give silently wrong logits."""
    x = torch.zeros(1, dtype=torch.float32, device=device)
    positions = torch.arange(32, device=device)[None]
    if kind == "mrope":  # (3, batch, seq_len): M-RoPE's temporal, height and width ids
        positions = positions[None].expand(3, 1, 32)
    for layer_type in getattr(ours, "layer_types", ()) or [None]:
        args = (x, positions) if layer_type is None else (x, positions, layer_type)
        with torch.no_grad():
            expected, got = theirs(*args), ours(*args)
        if not all(a.shape == b.shape and torch.allclose(a, b, rtol=0, atol=1e-5)
                   for a, b in zip(expected, got)):
            raise ValueError(
                f"the rotary embedding at {name!r} ({type(theirs).__name__}) gives cos/sin of "
                f"shape {tuple(expected[0].shape)} that HFRotaryEmbedding does not reproduce "
                f"(it writes transformers' half layout, torch.cat((angles, angles), -1)); this "
                f"family pairs or sizes its rotary otherwise and is not supported: nothing was "
                f"replaced")


def replace_rotary(model: nn.Module, *, max_len: int = 4096) -> dict[str, nn.Module]:
    """Replace every rotary embedding of a ``transformers`` model by posenc's drop-in.

    Finds each text rotary module of ``model`` wherever its family keeps it
    (``model.model.rotary_emb``: Llama, Qwen, Mistral, Gemma, DeepSeek...;
    ``model.gpt_neox.rotary_emb``: GPT-NeoX; ``model.model.language_model.rotary_emb``:
    multimodal wrappers such as Mistral 3 and Qwen2-VL; one module with a table per layer
    type: Gemma 3), builds an :class:`HFRotaryEmbedding` (an
    :class:`~posenc.pytorch.HFMultimodalRotaryEmbedding` where the config has an
    ``mrope_section``: Qwen2-VL, Qwen2.5-VL, Qwen3-VL) from that module's own (text) config on the device
    of its buffers, checks that it gives the same ``(cos, sin)`` at positions 0 to 31 within
    1e-5, and puts it in the module's place. The model's dtype is followed at every call
    (the tables of float32 and float64 are prepared, also after ``model.to(...)``).

    Args:
        model: a ``transformers`` model (``torch.nn.Module`` with a ``config``).
        max_len: keyword only, ``max_len`` of the drop-ins (default 4096).

    Returns:
        ``dict`` from each replaced module's name in ``model.named_modules()`` (e.g.
        ``"model.rotary_emb"``) to the module it replaced.

    Raises:
        TypeError: ``model`` is not a ``torch.nn.Module`` with a ``config``.
        ValueError: no rotary module built from the text config is found (a model without
            RoPE, or one whose family keeps it elsewhere); a config posenc
            cannot read (:func:`posenc.rope_config`); or a family whose ``(cos, sin)`` the
            drop-in does not reproduce (e.g. Cohere's interleaved pairs). Nothing is replaced
            then.
    """
    if not isinstance(model, nn.Module) or getattr(model, "config", None) is None:
        raise TypeError(f"model must be a transformers model (a torch.nn.Module with a "
                        f"config), got {type(model).__name__}")
    text = _text_config(model.config)
    found = _rotary_modules(model, text)
    if not found:
        raise ValueError(f"no rotary embedding built from the text config "
                         f"({getattr(text, 'model_type', '?')!r}) was found in "
                         f"{type(model).__name__}: nothing was replaced")
    kind = _rope_kind(text)
    drop_in = DROP_INS[kind]
    new = {}
    for name, module in found:
        buffers = list(module.buffers())
        device = buffers[0].device if buffers else torch.device("cpu")
        new[name] = drop_in(module.config, max_len=max_len).to(device)
        _check_same(name, module, new[name], device, kind)
    for name, module in new.items():
        parent, _, attribute = name.rpartition(".")
        setattr(model.get_submodule(parent), attribute, module)
    return {name: module for name, module in found}
