"""A Hugging Face ``transformers`` model's config read into posenc's RoPE arguments.

:func:`rope_config` reads a model's ``config.json`` (a dict) or its ``PretrainedConfig``
into the arguments of :func:`posenc.rope_frequencies` and of the modules. transformers
normalizes each family's keys in that family's config class (DeepSeek's ``qk_rope_head_dim``,
GPT-NeoX's ``rotary_pct`` and ``rotary_emb_base``, Gemma 3's ``rope_local_base_freq`` and
``layer_types``, the ``text_config`` of multimodal wrappers...): a dict is therefore read
through the class its ``model_type`` names when ``transformers`` is installed (imported here,
lazily, inside the call), and the config object it gives is read. Without ``transformers``,
or for a ``model_type`` it does not know, only the families of :data:`DICT_FAMILIES` are
read (their keys are few and tested against ``transformers``); any other family, and any
key that changes RoPE in some family but is not read for this one, is refused with an error
naming it. Nothing is read silently.

This module imports NumPy only.
"""

from __future__ import annotations

import copy
import importlib

from ._validate import check_base, check_int, check_real
from .rope_scaling import check_scaling

#: The rope types of ``transformers`` that :func:`rope_config` reads.
CONFIG_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")

#: The families (``model_type``) whose ``config.json`` is read without ``transformers``
#: (or when ``transformers`` does not know the family), each with the keys of its own that
#: are read besides the common ones (``rope_theta``, ``rope_scaling`` / ``rope_parameters``,
#: ``head_dim``, ``hidden_size``, ``num_attention_heads``, ``partial_rotary_factor``,
#: ``max_position_embeddings``, ``original_max_position_embeddings``). ``internlm2`` and
#: ``minicpm`` (remote code on the Hub) rotate as Llama does and are read as Llama configs.
DICT_FAMILIES: dict[str, tuple[str, ...]] = {
    **{family: () for family in (
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi",
        "phi3", "starcoder2", "olmo", "olmo2", "granite", "stablelm", "gemma", "gemma2",
        "cohere", "internlm2", "minicpm")},
    "deepseek_v2": ("qk_rope_head_dim",),
    "deepseek_v3": ("qk_rope_head_dim",),
    "gpt_neox": ("rotary_pct", "rotary_emb_base"),
}

#: Keys that change RoPE in some family: a dict read without ``transformers`` that has one
#: its family does not read (:data:`DICT_FAMILIES`) is refused, naming the key.
FAMILY_KEYS = ("qk_rope_head_dim", "rotary_pct", "rotary_emb_base", "rotary_emb_fraction",
               "rotary_dim", "rope_local_base_freq", "sliding_window_pattern", "text_config",
               "local_rope_theta", "global_rope_theta", "rope_pct", "use_dynamic_ntk",
               "kv_channels")

_MISSING = object()


def _length(name: str, value) -> int:
    """A length of a config as an ``int``: ``8192`` or ``8192.0`` (integral floats, as JSON
    writers sometimes give) accepted, anything else refused."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_int(name, value, minimum=1)


def _theta(value) -> float:
    """``rope_theta`` checked as :func:`check_base` checks a base, named as the user wrote it."""
    try:
        return check_base(value)
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("base must", "rope_theta must", 1)) from None


def _transformers_object(config: dict):
    """The config object ``transformers`` makes of a ``config.json`` dict, or ``None`` when
    ``transformers`` is not installed or does not know the dict's ``model_type``."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        return None
    try:  # optional: no extra installs transformers; without it the dict is read below
        CONFIG_MAPPING = importlib.import_module(
            "transformers.models.auto.configuration_auto").CONFIG_MAPPING
    except ImportError:
        return None
    if model_type not in CONFIG_MAPPING:
        return None
    values = copy.deepcopy(config)  # transformers writes into the dicts it is given
    values.pop("model_type")
    try:
        return CONFIG_MAPPING[model_type](**values)
    except Exception as error:  # noqa: BLE001 - any refusal of transformers is ours too
        raise ValueError(f"transformers refuses this {model_type!r} config: "
                         f"{type(error).__name__}: {error}") from error


def _check_dict_family(config: dict) -> None:
    """Refuse a dict read without ``transformers`` whose family or keys posenc does not read."""
    model_type = config.get("model_type")
    if model_type is not None and model_type not in DICT_FAMILIES:
        raise ValueError(
            f"the config's model_type {model_type!r} is a family posenc reads only through "
            f"transformers' own config class, and transformers is not installed or does not "
            f"know it; without transformers posenc reads the families "
            f"{', '.join(sorted(DICT_FAMILIES))}")
    own = DICT_FAMILIES.get(model_type, ())
    foreign = [key for key in FAMILY_KEYS if key in config and key not in own]
    section = config.get("rope_scaling") or config.get("rope_parameters") or {}
    if isinstance(section, dict) and "mrope_section" in section:
        foreign.append("mrope_section")
    if foreign:
        raise ValueError(
            f"the config ({'model_type ' + repr(model_type) if model_type else 'no model_type'}) "
            f"has the key(s) {', '.join(map(repr, foreign))}, which change RoPE in some "
            f"families and are not read for this one without transformers: install "
            f"transformers (posenc then reads the dict through the config class of its "
            f"model_type), or pass the transformers config object")


def _getters(config):
    if isinstance(config, dict):
        return (lambda name, default=None: config.get(name, default)), config.__contains__
    return (lambda name, default=None: getattr(config, name, default),
            lambda name: hasattr(config, name))


def _nested(section: dict, get) -> list[str]:
    """The layer types of a per-layer rope section (Gemma 3), or ``[]`` for one section."""
    labels = get("layer_types") or ()
    keys = [key for key in section if key in labels]
    if keys or not section:
        return keys
    if all(isinstance(value, dict) or value is None for value in section.values()):
        return list(section)  # nested, with labels the config does not list
    return []


def _prepare(config):
    """The config to read (a ``text_config`` of a wrapper; a dict through ``transformers``)
    and its getters."""
    if isinstance(config, dict):
        obj = _transformers_object(config)
        if obj is None:
            _check_dict_family(config)
            if isinstance(config.get("text_config"), dict):
                return _prepare(config["text_config"])
        else:
            config = obj
    elif not (hasattr(config, "__dict__") or hasattr(type(config), "__getattr__")):
        raise TypeError(f"config must be a transformers PretrainedConfig or a dict of a "
                        f"config.json, got {type(config).__name__} {config!r}")
    if not isinstance(config, dict):
        text = getattr(config, "text_config", None)
        if text is not None and text is not config:
            return _prepare(text)
    return config


def rope_layer_types(config) -> tuple[str, ...]:
    """The layer types that have a rope section of their own (Gemma 3's
    ``("sliding_attention", "full_attention")``, in the order the config gives; a type whose
    section is ``null``, a layer without RoPE, is left out), or ``()`` when one section serves
    every layer. ``config`` as for :func:`rope_config`."""
    config = _prepare(config)
    get, _ = _getters(config)
    section = get("rope_parameters") or get("rope_scaling") or {}
    if not isinstance(section, dict):
        return ()
    return tuple(key for key in _nested(section, get) if section[key] is not None)


def rope_config(config, *, layer_type: str | None = None) -> dict:
    """The arguments of :func:`rope_frequencies` for a Hugging Face ``transformers`` model.

    Reads a model's configuration as ``transformers`` 5 (5.24) reads it and returns
    ``{"head_dim": ..., "base": ..., "scaling": ...}`` such that ``rope_frequencies(
    d["head_dim"], base=d["base"], scaling=d["scaling"], seq_len=n)`` gives the model's
    inverse frequencies (``inv_freq``) and attention factor (``attention_scaling``) at
    sequence length ``n``. The modules take the same keys with ``layout="half"``:
    ``posenc.pytorch.RotaryEmbedding(**d, layout="half")`` and the Keras layer
    ``posenc.tensorflow.RotaryEmbedding(base=d["base"], scaling=d["scaling"],
    layout="half")``; :class:`posenc.pytorch.HFRotaryEmbedding` does all of it from the
    config (and :func:`posenc.pytorch.replace_rotary` swaps it into a model).

    How the config is read:

    - A ``config.json`` dict, ``transformers`` installed and its ``model_type`` known to it:
      through that family's config class (``transformers.AutoConfig.for_model``), then read
      as a config object. A config ``transformers`` refuses is refused (``ValueError``).
    - A dict otherwise: only the families of :data:`DICT_FAMILIES` (a dict without
      ``model_type`` is read as a Llama-style config); a family or a key posenc does not read
      there (:data:`FAMILY_KEYS`, e.g. ``rope_local_base_freq``, ``mrope_section``) is a
      ``ValueError`` naming it. DeepSeek's ``qk_rope_head_dim`` is the rotated width, and
      GPT-NeoX's ``rotary_pct`` (default 0.25) and ``rotary_emb_base`` (default 10000) are
      its ``partial_rotary_factor`` and ``rope_theta``, as ``transformers`` reads them.
    - A config object (duck-typed: any object with the attributes; this function does not
      import ``transformers`` for it): what the object gives. A multimodal wrapper's
      ``text_config`` (Gemma 3, Mistral 3...) is read in its place, for objects and dicts.

    Then, from the (text) config:

    - the rope section: ``rope_scaling`` or else ``rope_parameters``; none, ``null`` or
      ``{}`` means no scaling. Sections per layer type (Gemma 3: ``sliding_attention`` and
      ``full_attention``, with their own ``rope_theta`` and scaling) need ``layer_type``
      (:func:`rope_layer_types` lists them);
    - its type: ``"rope_type"``, else the older ``"type"``, else ``"default"``; an M-RoPE
      section (``mrope_section``: Qwen2-VL, Qwen2.5-VL, Qwen3-VL) gives its frequencies,
      which are one-axis RoPE's; which pairs turn with which position axis is
      :mod:`posenc.mrope`'s part (the one-axis drop-in refuses such a config);
    - ``base``: ``"rope_theta"`` inside the section, else the top-level ``rope_theta``,
      else 10000 (``transformers``' default);
    - ``head_dim``: the config's ``head_dim``, else ``hidden_size // num_attention_heads``,
      times ``partial_rotary_factor`` (inside the section, else top-level; 1 if absent),
      truncated to an ``int``: the width of the rotated part of each head;
    - ``"linear"``: ``factor``. ``"dynamic"``: ``factor``, and as the trained length the
      config's ``max_position_embeddings`` (``transformers``' dynamic rule ignores an
      ``original_max_position_embeddings`` in the section, and so does this function);
    - ``"yarn"`` and ``"llama3"``: ``original_max_position_embeddings`` from the top level
      of the config if it has one there (``transformers``' exception for Phi-3-style
      configs), else from the section, else ``max_position_embeddings`` (an explicit
      ``null`` is refused, as ``transformers`` fails on it); for ``"yarn"`` a ``factor`` of
      ``null`` becomes ``max_position_embeddings / original_max_position_embeddings``,
      ``beta_fast`` and ``beta_slow`` of ``null`` or 0 become 32 and 1, a ``truncate`` of
      ``null`` means no rounding, and ``attention_factor``, ``mscale``, ``mscale_all_dim``
      are passed on; ``"llama3"``: ``factor``, ``low_freq_factor``, ``high_freq_factor``;
    - lengths as integers (integral floats such as ``8192.0`` accepted). Keys a type does
      not use are ignored, as ``transformers`` ignores them (it logs a warning).

    Args:
        config: a ``transformers.PretrainedConfig`` (anything with its attributes) or a
            ``dict`` of a model's ``config.json``.
        layer_type: keyword only, for configs with one rope section per layer type: which
            one (a key of :func:`rope_layer_types`); ``None`` otherwise.

    Returns:
        ``dict`` with ``"head_dim"`` (``int``, even), ``"base"`` (``float``) and
        ``"scaling"`` (``None`` or a dict of :func:`rope_frequencies`, defaults filled in).

    Raises:
        TypeError: ``config`` is neither a mapping nor an object with config attributes, or
            a value has the wrong type (a length that is not an integer, a string factor, a
            ``rope_theta`` that is not a number).
        ValueError: a config ``transformers`` refuses or cannot read either (a type's
            required key missing or ``null``, no ``hidden_size``/``num_attention_heads`` nor
            ``head_dim``), a family or key not read without ``transformers`` (above), a rope
            type posenc does not implement (``"longrope"`` of Phi-3: the message names
            it), per-layer sections without
            ``layer_type`` (or an unknown one), an odd rotated width, or values that
            ``transformers`` accepts with only a logged warning but that give meaningless
            frequencies (``factor < 1``, a negative length, ``beta_fast < beta_slow``).

    Source: ``transformers.modeling_rope_utils`` (5.24: ``RotaryEmbeddingConfigMixin.
    standardize_rope_params`` and the ``_compute_*_parameters`` functions) and the config
    classes of the families; the rules: see :func:`rope_frequencies`.
    """
    config = _prepare(config)
    get, has = _getters(config)
    section = get("rope_scaling") or get("rope_parameters") or {}
    if not isinstance(section, dict):
        raise TypeError(f"the config's rope_scaling / rope_parameters must be a dict or null, "
                        f"got {type(section).__name__} {section!r}")
    layer_types = _nested(section, get)
    if layer_types:
        if layer_type not in layer_types:
            raise ValueError(
                f"the config has one rope section per layer type ({', '.join(layer_types)}, "
                f"as Gemma 3 has): pass layer_type= one of them, got {layer_type!r}")
        if section[layer_type] is None:
            raise ValueError(f"the config's layer type {layer_type!r} has no rope section "
                             f"(null: its layers use no RoPE)")
        section = section[layer_type]
    elif layer_type is not None:
        raise ValueError(f"the config has one rope section for every layer; got "
                         f"layer_type={layer_type!r}")
    elif not isinstance(config, dict) and get("rope_local_base_freq") is not None:
        raise ValueError("the config has rope_local_base_freq (Gemma 3's sliding-window "
                         "layers) but one rope section: a transformers 4 object; pass the "
                         "config.json dict, which transformers 5 reads per layer type")
    rope_type = section.get("rope_type", section.get("type", "default"))
    if rope_type not in CONFIG_TYPES:
        raise ValueError(
            f"rope type {rope_type!r} is not implemented by posenc (it reads "
            f"{', '.join(map(repr, CONFIG_TYPES))})"
            + ("; 'longrope' (Phi-3, Phi-3.5) scales every pair by its own searched factor "
               "(short_factor / long_factor), which posenc does not implement"
               if rope_type in ("longrope", "su") else ""))
    base = section.get("rope_theta", _MISSING)
    if base is _MISSING:
        base = get("rope_theta", _MISSING)
        if base is _MISSING:
            base = get("rotary_emb_base", 10000.0)  # GPT-NeoX's name, read as transformers does
    base = _theta(base)

    head_dim = get("head_dim")
    if head_dim is None and get("qk_rope_head_dim") is not None:  # DeepSeek's rotated part
        head_dim = get("qk_rope_head_dim")
    if head_dim is None:
        hidden, heads = get("hidden_size"), get("num_attention_heads")
        if hidden is None or heads is None:
            raise ValueError("the config gives neither head_dim nor hidden_size and "
                             "num_attention_heads: the width of a head is unknown")
        head_dim = check_int("hidden_size", hidden, minimum=1) // check_int(
            "num_attention_heads", heads, minimum=1)
    head_dim = check_int("head_dim", head_dim, minimum=1)
    partial = section.get("partial_rotary_factor", _MISSING)
    if partial is _MISSING:
        partial = get("partial_rotary_factor")
    if partial is None and isinstance(config, dict) and config.get("model_type") == "gpt_neox":
        partial = config.get("rotary_pct", 0.25)  # GPTNeoXConfig's default
    if partial is not None:
        partial = check_real("partial_rotary_factor", partial, above=0.0)
        if partial > 1:
            raise ValueError(f"partial_rotary_factor must be in (0, 1], got {partial!r}")
        head_dim = int(head_dim * partial)
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"the rotated width of a head is {head_dim} (head_dim times "
                         f"partial_rotary_factor {partial}); RoPE needs an even width >= 2")
    result = {"head_dim": head_dim, "base": base, "scaling": None}
    if rope_type == "default":
        return result
    return {**result, "scaling": _scaling(rope_type, section, get, has)}


def _scaling(rope_type: str, section: dict, get, has) -> dict:
    """The scaling dict of :func:`rope_config` (see there) for a rope section."""
    def required(key):
        if section.get(key) is None:
            raise ValueError(f"the config's rope section of type {rope_type!r} has no "
                             f"{key!r}, which transformers requires too; got {section!r}")
        return section[key]

    def max_positions():
        if get("max_position_embeddings") is None:
            raise ValueError(f"rope type {rope_type!r} needs the config's "
                             f"max_position_embeddings, which it does not have")
        return _length("max_position_embeddings", get("max_position_embeddings"))

    scaling: dict = {"rope_type": rope_type}
    if rope_type in ("yarn", "llama3"):
        if has("original_max_position_embeddings"):
            original = get("original_max_position_embeddings")
        elif "original_max_position_embeddings" in section:
            original = section["original_max_position_embeddings"]
        else:
            original = max_positions()
        if original is None:
            raise ValueError(f"the config's rope section of type {rope_type!r} has "
                             f"original_max_position_embeddings null, which transformers "
                             f"cannot use either; write the trained length or leave the "
                             f"key out (then max_position_embeddings is used)")
        scaling["original_max_position_embeddings"] = _length(
            "original_max_position_embeddings", original)
    if rope_type == "yarn":
        if "factor" not in section:
            required("factor")
        factor = section["factor"]
        if factor is None:
            factor = max_positions() / scaling["original_max_position_embeddings"]
        scaling["factor"] = factor
        scaling["beta_fast"] = section.get("beta_fast") or 32.0
        scaling["beta_slow"] = section.get("beta_slow") or 1.0
        for key in ("attention_factor", "mscale", "mscale_all_dim"):
            scaling[key] = section.get(key)
        truncate = section.get("truncate", True)
        scaling["truncate"] = bool(truncate) if truncate is None else truncate
    else:
        scaling["factor"] = required("factor")
    if rope_type == "dynamic":
        scaling["original_max_position_embeddings"] = max_positions()
    if rope_type == "llama3":
        scaling["low_freq_factor"] = required("low_freq_factor")
        scaling["high_freq_factor"] = required("high_freq_factor")
    return check_scaling(scaling)
