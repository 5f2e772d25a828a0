"""RoPE scaling: the frequencies of a rotary embedding stretched past the trained length.

A model trained with RoPE (Su et al. 2021) on sequences of up to ``L`` tokens has seen its
slowest pairs turn only part of a revolution. Run on longer sequences, those pairs reach
angles it never saw. The four rules of :func:`rope_frequencies` change the angular
frequency ``w_i = base ** (-2i / head_dim)`` of every pair ``i`` so that positions up to
``factor * L`` give angles the model knows, each in its own way:

- ``"linear"``, position interpolation (Chen et al. 2023): every frequency divided by
  ``factor``, i.e. position ``pos`` turned as ``pos / factor`` was.
- ``"dynamic"``, dynamic "NTK-aware" scaling (bloc97 2023; the dynamic form was posted by
  emozilla on Reddit the same year and is described by Peng et al. 2023): a larger ``base``,
  so the fast pairs barely change and the slow ones slow down the most, chosen from the
  current sequence length ``seq_len``.
- ``"yarn"``, YaRN (Peng et al. 2023): fast pairs unchanged, slow pairs interpolated as in
  ``"linear"``, and between them a ramp that is linear in the pair index ``i``, from the
  pair that turns ``beta_fast`` times over ``L`` to the one that turns ``beta_slow`` times
  (both ends rounded outwards to whole pairs), as ``transformers`` and YaRN's reference code
  (``jquesnelle/yarn``) compute it; plus an ``attention_factor`` on the cosines and sines
  (so on queries and keys). The paper writes the ramp as a function of the number of turns
  ``r`` itself, ``(r - alpha) / (beta - alpha)``; since ``r`` falls geometrically with ``i``,
  the two ramps have the same ends but different shapes in between.
- ``"llama3"``, Llama 3.1's rule (Llama Team, Meta 2024): like YaRN's, but the ramp is
  placed by wavelength (``L / high_freq_factor`` to ``L / low_freq_factor``) and there is
  no attention factor.

The ``scaling`` dicts have the keys and defaults of Hugging Face ``transformers``'
``rope_parameters`` (``transformers.modeling_rope_utils``, version 5) without
``rope_theta`` (:func:`rope_frequencies`' ``base``). A model's ``config.json`` or its
``PretrainedConfig`` is read by :func:`rope_config` (:mod:`posenc.hf_config`, re-exported
here), which reads it as ``transformers`` 5 does, or refuses it, and returns the arguments
of :func:`rope_frequencies`; do not pass a config's rope section to ``scaling`` unread (its
``"dynamic"`` length, for one, is ``max_position_embeddings``, outside that section).

This module imports NumPy only.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import MAX_POSITION, check_base, check_head_dim, check_int, check_real

#: The keys every scaling type accepts: (required, optional with their defaults).
#: ``None`` as a default means "computed from the other keys" (see :func:`rope_frequencies`).
SCALING_KEYS: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
    "default": ((), {}),
    "linear": (("factor",), {}),
    "dynamic": (("factor", "original_max_position_embeddings"), {}),
    "yarn": (("factor", "original_max_position_embeddings"),
             {"attention_factor": None, "beta_fast": 32.0, "beta_slow": 1.0,
              "mscale": None, "mscale_all_dim": None, "truncate": True}),
    "llama3": (("factor", "original_max_position_embeddings", "low_freq_factor",
                "high_freq_factor"), {}),
}


def _real(name: str, value, *, above: float | None = None, at_least: float | None = None
          ) -> float:
    """``scaling[name]`` as a finite ``float``, checked against a bound (:func:`check_real`)."""
    return check_real(f"scaling[{name!r}]", value, above=above, at_least=at_least)


def check_scaling(scaling) -> dict | None:
    """Return ``scaling`` with its defaults filled in, as plain Python numbers, or ``None``.

    ``None`` and ``{"rope_type": "default"}`` (no scaling) both give ``None``.

    Raises:
        TypeError: ``scaling`` is not ``None`` or a dict, its ``rope_type`` is not a string,
            a number is not a real number (``truncate``: not a bool, the original length: not
            an integer).
        ValueError: no ``rope_type``, an unknown ``rope_type``, a missing required key, a key
            the type does not take (``rope_theta`` among them: pass it as ``base``), ``factor``
            < 1, a non-positive length, beta or attention factor, ``beta_fast < beta_slow``,
            or ``high_freq_factor <= low_freq_factor``.
    """
    if scaling is None:
        return None
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be None or a dict such as {{'rope_type': 'linear', "
                        f"'factor': 4.0}}, got {type(scaling).__name__} {scaling!r}")
    if "rope_type" not in scaling:
        raise ValueError(f"scaling must have a 'rope_type' key (one of "
                         f"{', '.join(map(repr, SCALING_KEYS))}), got keys {sorted(scaling)}")
    rope_type = scaling["rope_type"]
    if not isinstance(rope_type, str):
        raise TypeError(f"scaling['rope_type'] must be a string, got "
                        f"{type(rope_type).__name__} {rope_type!r}")
    if rope_type not in SCALING_KEYS:
        raise ValueError(f"scaling['rope_type'] must be one of "
                         f"{', '.join(map(repr, SCALING_KEYS))}, got {rope_type!r}")
    required, optional = SCALING_KEYS[rope_type]
    missing = [key for key in required if key not in scaling]
    if missing:
        raise ValueError(f"scaling of rope_type {rope_type!r} needs the key(s) "
                         f"{', '.join(map(repr, missing))}, got keys {sorted(scaling)}")
    unknown = sorted(set(scaling) - {"rope_type", *required, *optional})
    if unknown:
        hint = " (pass rope_theta as base=)" if "rope_theta" in unknown else ""
        raise ValueError(f"scaling of rope_type {rope_type!r} takes the keys "
                         f"{', '.join(map(repr, ['rope_type', *required, *optional]))}; got "
                         f"unknown key(s) {', '.join(map(repr, unknown))}{hint}")
    if rope_type == "default":
        return None
    # transformers reads an explicit None (a null in config.json) as the default
    values = {**optional, **{key: value for key, value in scaling.items()
                             if value is not None or key not in optional}}
    values["factor"] = _real("factor", values["factor"], at_least=1.0)
    if "original_max_position_embeddings" in values:
        values["original_max_position_embeddings"] = check_int(
            "scaling['original_max_position_embeddings']",
            values["original_max_position_embeddings"], minimum=1)
    if rope_type == "yarn":
        for key in ("beta_fast", "beta_slow"):
            values[key] = _real(key, values[key], above=0.0)
        if values["beta_fast"] < values["beta_slow"]:
            raise ValueError(f"scaling['beta_fast'] must be >= scaling['beta_slow'] (fast pairs "
                             f"turn more often), got {values['beta_fast']!r} < "
                             f"{values['beta_slow']!r}")
        for key in ("attention_factor", "mscale", "mscale_all_dim"):
            if values[key] is not None:
                values[key] = _real(key, values[key], above=0.0)
        if not isinstance(values["truncate"], (bool, np.bool_)):
            raise TypeError(f"scaling['truncate'] must be a bool, got "
                            f"{type(values['truncate']).__name__} {values['truncate']!r}")
    if rope_type == "llama3":
        low = _real("low_freq_factor", values["low_freq_factor"], above=0.0)
        high = _real("high_freq_factor", values["high_freq_factor"], above=0.0)
        if high <= low:
            raise ValueError(f"scaling['high_freq_factor'] must be > scaling['low_freq_factor'], "
                             f"got {high!r} <= {low!r}")
        values["low_freq_factor"], values["high_freq_factor"] = low, high
    return values


def rope_frequencies(head_dim: int, *, base: float = 10000.0, scaling: dict | None = None,
                     seq_len: int | None = None) -> tuple[np.ndarray, float]:
    """The angular frequency of every RoPE pair, with an optional long-context scaling.

    Without ``scaling``, pair ``i`` turns by ``w_i = base ** (-2i / head_dim)`` radians per
    position (RoFormer, :func:`posenc.rope`). With it, ``w_i`` is changed by one rule, with
    ``f = scaling["factor"]`` and ``L = scaling["original_max_position_embeddings"]`` (the
    length the model was trained on):

    - ``"linear"`` (Chen et al. 2023): ``w_i / f``.
    - ``"dynamic"`` (bloc97 2023, dynamic NTK): ``base`` replaced by ``base * (f * n / L -
      (f - 1)) ** (head_dim / (head_dim - 2))`` with ``n = max(seq_len, L)``: no change up to
      ``L`` tokens, then a larger base as the sequence grows. ``L`` plays the part of
      ``transformers``' ``config.max_position_embeddings``.
    - ``"yarn"`` (Peng et al. 2023: "NTK-by-parts" interpolation plus a temperature): with ``r_i = L *
      w_i / (2 pi)`` the number of turns of pair ``i`` over ``L`` positions, pairs that turn
      more than ``beta_fast`` times keep ``w_i``, those that turn less than ``beta_slow``
      times get ``w_i / f``, and a linear ramp in ``i`` joins them (its ends are the pair
      indices of ``beta_fast`` and ``beta_slow`` turns, rounded outwards when
      ``truncate``). ``attention_factor`` defaults to ``0.1 ln(f) + 1`` (the paper's
      ``sqrt(1 / t)``), or to
      ``mscale``'s ratio ``(0.1 mscale ln f + 1) / (0.1 mscale_all_dim ln f + 1)`` when both
      are given (DeepSeek's form).
    - ``"llama3"`` (Llama 3.1, Llama Team 2024; the rule is in Meta's code release,
      ``llama-models``, not in the paper): with wavelength ``lambda_i = 2 pi / w_i``, pairs with ``lambda_i <
      L / high_freq_factor`` keep ``w_i``, those with ``lambda_i > L / low_freq_factor`` get
      ``w_i / f``, and in between ``(1 - s) w_i / f + s w_i`` with ``s = (L / lambda_i -
      low_freq_factor) / (high_freq_factor - low_freq_factor)``.

    Args:
        head_dim: width of the rotated vectors, an even ``int >= 2`` (``head_dim // 2``
            pairs).
        base: keyword only, the constant of the frequencies (Hugging Face's ``rope_theta``;
            10000 in RoFormer, 500000 in Llama 3), a finite ``float > 1``.
        scaling: keyword only, ``None`` (no scaling) or a dict in the form of Hugging Face
            ``transformers``' ``rope_parameters`` without ``rope_theta``: ``"rope_type"``
            (``"default"``, ``"linear"``, ``"dynamic"``, ``"yarn"`` or ``"llama3"``), a
            ``"factor" >= 1`` and the type's keys (:data:`SCALING_KEYS`):
            ``"original_max_position_embeddings"`` (an ``int >= 1``, tokens; every type but
            ``"linear"``), ``"beta_fast"`` (default 32), ``"beta_slow"`` (default 1),
            ``"attention_factor"``, ``"mscale"``, ``"mscale_all_dim"``, ``"truncate"``
            (default ``True``) for ``"yarn"``; ``"low_freq_factor"`` and
            ``"high_freq_factor"`` (required, 1 and 4 in Llama 3.1) for ``"llama3"``. For
            ``"dynamic"``, ``"original_max_position_embeddings"`` is the length at which the
            base starts to grow, which ``transformers`` takes from the config's
            ``max_position_embeddings`` (not from the section): read a model's config with
            :func:`rope_config`, which puts the right length here.
        seq_len: keyword only, the length of the current sequence (an ``int`` from 0 to
            ``2**53``, tokens);
            required by ``"dynamic"``, unused by the other types.

    Returns:
        ``(inverse_frequencies, attention_factor)``: ``inverse_frequencies`` a
        ``numpy.ndarray`` of shape ``(head_dim // 2,)``, dtype ``float64``, the angular
        frequency of pair ``i`` in radians per position (Hugging Face's ``inv_freq``), and
        ``attention_factor`` a Python ``float`` by which the cosines and sines are multiplied
        (1.0 except for ``"yarn"``). ``transformers`` computes the same values in float32;
        they agree to within 1e-6 relative.

    Raises:
        TypeError: ``head_dim`` or ``seq_len`` is not an integer, ``base`` is not a real
            number, ``scaling`` is not ``None`` or a dict, or one of its values has the wrong
            type.
        ValueError: ``head_dim`` is odd or < 2, ``base`` is not finite and > 1, ``seq_len``
            is negative, past ``2**53`` or missing for ``"dynamic"``, or ``scaling`` is invalid: unknown
            ``rope_type``, missing or unknown key, ``factor < 1``, non-positive lengths,
            betas or factors, ``beta_fast < beta_slow``, ``high_freq_factor <=
            low_freq_factor``.

    Sources: Su et al. 2021, "RoFormer" (the frequencies); Chen et al. 2023, "Extending
    Context Window of Large Language Models via Positional Interpolation" (linear); bloc97
    2023, "NTK-Aware Scaled RoPE allows LLaMA models to have extended (8k+) context size
    without any fine-tuning and minimal perplexity degradation" (Reddit r/LocalLLaMA; the
    dynamic form: emozilla 2023, "Dynamically Scaled RoPE further increases performance of
    long context LLaMA with zero fine-tuning", same forum); Peng et al. 2023, "YaRN: Efficient Context
    Window Extension of Large Language Models" (yarn); Llama Team, AI @ Meta 2024, "The
    Llama 3 Herd of Models" (llama3, whose rule is given in Meta's code release rather
    than the paper).
    """
    head_dim = check_head_dim("head_dim", head_dim)
    base = check_base(base)
    if seq_len is not None:
        seq_len = check_int("seq_len", seq_len)
        if seq_len > MAX_POSITION:
            raise ValueError(f"seq_len must be <= 2**53 = {MAX_POSITION} (float64 holds every "
                             f"position up to it exactly), got {seq_len}")
    values = check_scaling(scaling)
    exponents = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim  # 2i / head_dim
    if values is None:
        return base ** -exponents, 1.0
    rope_type, factor = values["rope_type"], values["factor"]
    if rope_type == "linear":
        return base ** -exponents / factor, 1.0
    original = values["original_max_position_embeddings"]
    if rope_type == "dynamic":
        if seq_len is None:
            raise ValueError("scaling of rope_type 'dynamic' needs seq_len, the length of the "
                             "current sequence (its base grows with it)")
        if head_dim == 2:  # one pair of frequency base ** 0 = 1, whatever the base
            return np.ones(1), 1.0
        stretch = factor * max(seq_len, original) / original - (factor - 1.0)
        new_base = base * stretch ** (head_dim / (head_dim - 2))
        if not math.isfinite(new_base):
            raise ValueError(f"scaling of rope_type 'dynamic' overflows the base for "
                             f"seq_len={seq_len}: {base} * {stretch} ** "
                             f"({head_dim} / {head_dim - 2}) is not finite")
        return new_base ** -exponents, 1.0
    frequencies = base ** -exponents
    if rope_type == "yarn":
        return _yarn(frequencies, base, head_dim, values)
    return _llama3(frequencies, values), 1.0


def _yarn(frequencies: np.ndarray, base: float, head_dim: int, values: dict
          ) -> tuple[np.ndarray, float]:
    """YaRN's frequencies and attention factor (see :func:`rope_frequencies`)."""
    factor, original = values["factor"], values["original_max_position_embeddings"]

    def pair_of_turns(turns: float) -> float:
        # The (real) pair index i at which r_i = L * base ** (-2i / d) / (2 pi) equals turns.
        return head_dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_of_turns(values["beta_fast"]), pair_of_turns(values["beta_slow"])
    if values["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001  # as transformers does: a step instead of a division by zero
    ramp = np.clip((np.arange(head_dim // 2) - low) / (high - low), 0.0, 1.0)
    scaled = (1.0 - ramp) * frequencies + ramp * frequencies / factor

    def log_gain(mscale: float) -> float:
        return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0

    attention_factor = values["attention_factor"]
    if attention_factor is None:
        if values["mscale"] and values["mscale_all_dim"]:
            attention_factor = log_gain(values["mscale"]) / log_gain(values["mscale_all_dim"])
        else:
            attention_factor = log_gain(1.0)
    return scaled, float(attention_factor)


def _llama3(frequencies: np.ndarray, values: dict) -> np.ndarray:
    """Llama 3.1's frequencies (see :func:`rope_frequencies`)."""
    factor, original = values["factor"], values["original_max_position_embeddings"]
    low, high = values["low_freq_factor"], values["high_freq_factor"]
    wavelengths = 2 * math.pi / frequencies
    smooth = (original / wavelengths - low) / (high - low)
    between = (1.0 - smooth) * frequencies / factor + smooth * frequencies
    return np.where(wavelengths < original / high, frequencies,
                    np.where(wavelengths > original / low, frequencies / factor, between))


# rope_config reads a model's config into the arguments above; it lives in posenc.hf_config
# (imported last: that module uses check_scaling) and is re-exported here, where it always was.
from .hf_config import CONFIG_TYPES, rope_config  # noqa: E402,F401
