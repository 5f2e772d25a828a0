"""Rotary position embedding (RoPE) for Keras 3: a layer that rotates queries or keys.

The frequencies come from :func:`posenc.rope_frequencies` (NumPy, float64, once per width);
the rotation is written with ``keras.ops``, so the layer runs under every Keras 3 backend.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .._validate import check_base, check_head_dim, check_int
from ..relative import check_layout
from ..rope_scaling import check_scaling, rope_frequencies
from ._backend import REGISTERED_PACKAGE, _float_dtype, _scalar_index, _static_shape


@keras.saving.register_keras_serializable(package=REGISTERED_PACKAGE)
class RotaryEmbedding(keras.layers.Layer):
    """Keras 3 layer that rotates queries or keys by their positions (RoPE), on every backend.

    Call it on the queries and on the keys of an attention layer, after their projections
    and before the scores: the score of query position ``m`` with key position ``n`` then
    depends on ``m - n`` only. Pair ``i`` of the vector at position ``pos`` is rotated by
    the angle ``pos * w_i``, with ``w_i`` from :func:`posenc.rope_frequencies` (``base **
    (-2i / head_dim)`` without ``scaling``), and with a YaRN ``scaling`` the cosines and
    sines are multiplied by its attention factor. ``layout`` says which coordinates form
    pair ``i``: ``(2i, 2i + 1)`` for ``"interleaved"`` (RoFormer, GPT-J; the default, as in
    :func:`posenc.rope` and ``posenc.pytorch.RotaryEmbedding``, which give the same values)
    or ``(i, i + head_dim / 2)`` for ``"half"`` (GPT-NeoX, Hugging Face ``transformers``,
    keras-hub). Weights trained with one layout give other scores with the other, without
    any error: a layer for a ``transformers`` or keras-hub model needs ``layout="half"``.

    Hugging Face models: ``d = posenc.rope_config(config)`` reads a ``transformers``
    config (a ``config.json`` dict needs no ``transformers``) as ``transformers`` reads it;
    ``RotaryEmbedding(base=d["base"], scaling=d["scaling"], layout="half")`` then rotates
    vectors of width ``d["head_dim"]`` (read from the input) as the model does.

    keras-hub: ``RotaryEmbedding(layout="half", base=b, scaling={"rope_type": "linear",
    "factor": f}, sequence_axis=s, feature_axis=a)`` gives the values of keras-hub's
    ``keras_hub.layers.RotaryEmbedding(max_wavelength=b, scaling_factor=f,
    sequence_axis=s, feature_axis=a)`` (0.32.0; tested against a vendored copy, within
    float32 rounding), with the same call; so does ``scaling={"rope_type": "yarn", ...}``
    against keras-hub's ``rope_type="yarn"`` (same keys, ``truncate=True``). keras-hub's
    ``rope_type="dynamic"`` is another rule (every frequency divided by ``factor ** (d / (d
    - 2))``, whatever the length): this layer's ``"dynamic"`` is Hugging Face's
    (:func:`posenc.rope_frequencies`). Since it equals keras-hub's layer, it can stand in
    wherever a keras-hub model builds its ``RotaryEmbedding`` (with ``layout="half"`` and
    keras-hub's axes); nothing else of the model needs to change.

    Computation: the frequencies are computed once per width in float64 and rounded to the
    working dtype (float64 for a float64 layer, float32 otherwise: float16 and bfloat16
    inputs are rotated in float32 and the result rounded to the compute dtype); angles,
    cosines and sines are computed in the graph in that dtype, as keras-hub and
    ``transformers`` do. In float32 an angle ``pos * w`` is within about ``pos * 2**-23``
    radians of the exact one, so the entries (of inputs of order 1) are within ``1e-6 +
    pos * 2**-22`` of :func:`posenc.rope` (positions are exact in float32 below ``2**24``).
    The layer holds no weights; it works (tested) in eager calls, ``fit``, ``tf.function``
    with XLA and ``jax.jit``, with any sequence length, known or not when traced (a
    ``"dynamic"`` scaling too: its base is computed in the graph from the length).

    Args:
        base: keyword only, the constant of the frequencies (10000 in RoFormer; Hugging
            Face's ``rope_theta``), a finite ``float > 1``.
        scaling: keyword only, ``None`` or a dict in the form of Hugging Face's
            ``rope_parameters`` without ``rope_theta``: ``"linear"``, ``"dynamic"``,
            ``"yarn"`` or ``"llama3"`` with its keys (see :func:`posenc.rope_frequencies`).
            For ``"dynamic"`` the sequence length is ``start_index + seq_len``, or the largest
            of ``positions`` plus one (Hugging Face's ``max(position_ids) + 1``).
        layout: keyword only, ``"interleaved"`` (default) or ``"half"``, see above.
        sequence_axis: keyword only, the axis of the input along which the positions run, an
            ``int`` (negative counts from the end; default 1, as in ``(batch, seq_len,
            heads, head_dim)``).
        feature_axis: keyword only, the axis of the rotated coordinates, an ``int`` (default
            -1), not ``sequence_axis``.
        **layer_kwargs: passed to ``keras.layers.Layer`` (``name``, ``dtype``, ...).

    Shapes:
        ``call(inputs, start_index=0, positions=None)``: ``inputs`` floating-point, of rank
        >= 2 with a sequence axis and an even feature size ``head_dim >= 2``, e.g. ``(batch,
        seq_len, head_dim)`` or ``(batch, seq_len, heads, head_dim)``. Returns a tensor of
        the same shape in the layer's compute dtype.

    Saving: ``get_config`` holds the constructor arguments (``scaling`` with its defaults
    filled in); the layer is registered as ``"posenc.tensorflow>RotaryEmbedding"``: import
    ``posenc.tensorflow`` before ``keras.models.load_model``. Tested with ``.keras`` files
    under the TensorFlow, JAX and PyTorch backends.

    Raises:
        TypeError, ValueError: bad constructor arguments (positional arguments are a
            ``TypeError``; a bad ``scaling`` as :func:`posenc.rope_frequencies` says), or a
            bad input to :meth:`call`.

    Source: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", sections 3.2 and 3.4.2; the half layout from Black et al. 2022 (GPT-NeoX);
    the scalings' sources in :func:`posenc.rope_frequencies`.
    """

    def __init__(self, *, base: float = 10000.0, scaling: dict | None = None,
                 layout: str = "interleaved", sequence_axis: int = 1, feature_axis: int = -1,
                 **layer_kwargs) -> None:
        super().__init__(**layer_kwargs)
        self.base = check_base(base)
        self.scaling = check_scaling(scaling)
        self.layout = check_layout(layout)
        self.sequence_axis = check_int("sequence_axis", sequence_axis, minimum=None)
        self.feature_axis = check_int("feature_axis", feature_axis, minimum=None)
        if self.sequence_axis == self.feature_axis:
            raise ValueError(f"sequence_axis and feature_axis must be different axes, both "
                             f"are {self.sequence_axis}")
        _float_dtype(self.compute_dtype)  # e.g. float64 under JAX without its 64-bit mode
        self._frequencies = {}  # head_dim: (frequencies, exponents of "dynamic", factor)

    def _axes(self, shape: tuple) -> tuple[int, int, int]:
        """``(sequence_axis, feature_axis, head_dim)`` for an input of ``shape``, the axes
        counted from 0, after checking them."""
        rank = len(shape)
        axes = []
        for name, axis in (("sequence_axis", self.sequence_axis),
                           ("feature_axis", self.feature_axis)):
            if not -rank <= axis < rank:
                raise ValueError(f"{name}={axis} is out of range for inputs of rank {rank} "
                                 f"(shape {shape}); RotaryEmbedding needs inputs of rank >= 2")
            axes.append(axis % rank)
        if axes[0] == axes[1]:
            raise ValueError(f"sequence_axis={self.sequence_axis} and feature_axis="
                             f"{self.feature_axis} are the same axis of inputs of rank {rank}")
        head_dim = shape[axes[1]]
        if head_dim is None:
            raise ValueError(f"inputs must have a known feature size (axis {self.feature_axis})"
                             f", got shape {shape}")
        check_head_dim(f"the feature size of inputs (axis {self.feature_axis})", head_dim)
        return axes[0], axes[1], head_dim

    def build(self, input_shape) -> None:
        """Check the input's shape: rank, axes and an even feature size (see :meth:`call`)."""
        self._axes(tuple(input_shape))

    def _constants(self, head_dim: int, work_dtype: str):
        """Frequencies (and, for ``"dynamic"``, exponents of its stretch) as tensors of
        ``work_dtype``, and the attention factor; computed in float64 once per width."""
        if head_dim not in self._frequencies:
            rope_type = None if self.scaling is None else self.scaling["rope_type"]
            if rope_type == "dynamic":  # w_i = w0_i * stretch ** (-2i / (head_dim - 2))
                frequencies, factor = rope_frequencies(head_dim, base=self.base)
                pairs = np.arange(head_dim // 2, dtype=np.float64)
                exponents = -2.0 * pairs / max(head_dim - 2, 1)
            else:
                frequencies, factor = rope_frequencies(head_dim, base=self.base,
                                                       scaling=self.scaling)
                exponents = None
            self._frequencies[head_dim] = frequencies, exponents, factor
        frequencies, exponents, factor = self._frequencies[head_dim]
        if exponents is not None:
            exponents = ops.convert_to_tensor(exponents.astype(work_dtype))
        return ops.convert_to_tensor(frequencies.astype(work_dtype)), exponents, factor

    def _positions(self, x, start_index, positions, work_dtype: str):
        """Positions of ``x`` (sequence on axis -2), ``(seq_len,)`` or ``(batch, seq_len)``."""
        if positions is None:
            start = _scalar_index("start_index", start_index)
            length = ops.shape(x)[-2]
            positions = ops.arange(length, dtype=work_dtype)
            if isinstance(start, int):
                return positions + float(start) if start else positions
            return positions + ops.cast(start, work_dtype)
        if ops.is_tensor(start_index) or not (isinstance(start_index, int) and start_index == 0):
            raise ValueError("pass either start_index or positions, not both")
        if isinstance(positions, (list, tuple, np.ndarray)):
            positions = ops.convert_to_tensor(np.asarray(positions))
        if not ops.is_tensor(positions) or type(positions).__name__ == "RaggedTensor":
            raise TypeError(f"positions must be a tensor of shape (seq_len,) or (batch, "
                            f"seq_len), got {type(positions).__name__}")
        dtype = keras.backend.standardize_dtype(positions.dtype)
        if not (keras.backend.is_int_dtype(dtype) or keras.backend.is_float_dtype(dtype)):
            raise TypeError(f"positions must be an integer or floating-point tensor, got "
                            f"dtype {dtype}")
        shape, x_shape = _static_shape(positions), _static_shape(x)
        fits = len(shape) in (1, 2) and shape[-1] in (None, x_shape[-2]) and (
            len(shape) == 1 or (len(x_shape) >= 3 and shape[0] in (None, 1, x_shape[0])))
        if not fits:
            raise ValueError(
                f"positions must have shape (seq_len,) or (batch, seq_len) for inputs of "
                f"shape {x_shape} read with the sequence on axis {self.sequence_axis} and the "
                f"batch on axis 0, got shape {shape}")
        return ops.cast(positions, work_dtype)

    def call(self, inputs, start_index=0, positions=None):
        """Rotate ``inputs`` for positions ``start_index, start_index + 1, ...`` or ``positions``.

        Args:
            inputs: floating-point tensor with the positions along ``sequence_axis`` and an
                even number ``head_dim >= 2`` of coordinates along ``feature_axis``.
            start_index: position of the first entry along the sequence axis: an ``int >=
                0`` or a scalar integer tensor (the number of tokens already in a cache),
                as in keras-hub.
            positions: instead of ``start_index``, the position of every entry: a tensor (or
                NumPy array) of integers or real numbers, of shape ``(seq_len,)`` (every
                sequence) or ``(batch, seq_len)`` (batch on axis 0 of ``inputs``; then the
                input needs rank >= 3 and neither axis may be 0), used for every other axis
                (heads); any real positions work, negative and fractional ones included.

        Returns:
            Tensor of the same shape as ``inputs``, in the layer's compute dtype.

        Raises:
            TypeError: ``inputs`` is not floating-point, ``start_index`` is not an integer
                (or integer tensor), or ``positions`` is not a numeric tensor.
            ValueError: the axes are out of range or the same for the input's rank, the
                feature size is unknown, odd or 0, ``start_index`` is negative or not a
                scalar, ``positions`` has the wrong shape, or both ``start_index`` and
                ``positions`` are given.
        """
        dtype = keras.backend.standardize_dtype(inputs.dtype)
        if not keras.backend.is_float_dtype(dtype):
            raise TypeError(f"inputs must be a floating-point tensor, got dtype {dtype}")
        sequence_axis, feature_axis, head_dim = self._axes(_static_shape(inputs))
        work_dtype = "float64" if self.compute_dtype == "float64" else "float32"
        rank = len(inputs.shape)
        moved = (sequence_axis, feature_axis) != (rank - 2, rank - 1)
        x = ops.moveaxis(inputs, (sequence_axis, feature_axis), (-2, -1)) if moved else inputs
        x = x if dtype == work_dtype else ops.cast(x, work_dtype)
        pos = self._positions(x, start_index, positions, work_dtype)
        if len(pos.shape) == 2 and 0 in (sequence_axis, feature_axis):
            raise ValueError("positions of shape (batch, seq_len) need the batch on axis 0 of "
                             "inputs, but axis 0 is the sequence or feature axis")
        frequencies, exponents, factor = self._constants(head_dim, work_dtype)
        if exponents is not None:  # "dynamic": the base grows with the sequence's length
            frequencies = frequencies * self._stretch(pos, work_dtype) ** exponents
        angles = ops.expand_dims(pos, -1) * frequencies
        for _ in range(len(x.shape) - 3 if len(pos.shape) == 2 else 0):
            angles = ops.expand_dims(angles, 1)  # (batch, 1, ..., seq_len, head_dim / 2)
        cos, sin = ops.cos(angles), ops.sin(angles)
        if factor != 1.0:
            cos, sin = cos * factor, sin * factor
        if self.layout == "interleaved":  # pairs (2i, 2i + 1) brought to (i, i + head_dim / 2)
            order = np.concatenate([np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)])
            x = ops.take(x, order.astype("int32"), axis=-1)
        first, second = ops.split(x, 2, axis=-1)
        out = ops.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)
        if self.layout == "interleaved":
            out = ops.take(out, np.argsort(order).astype("int32"), axis=-1)
        out = out if self.compute_dtype == work_dtype else ops.cast(out, self.compute_dtype)
        return ops.moveaxis(out, (-2, -1), (sequence_axis, feature_axis)) if moved else out

    def _stretch(self, pos, work_dtype: str):
        """``"dynamic"``: ``max(f * n / L - (f - 1), 1)`` for the sequence length ``n``."""
        factor = self.scaling["factor"]
        original = self.scaling["original_max_position_embeddings"]
        length = ops.max(pos, initial=-1.0) + 1.0  # 0 for no position
        stretch = ops.cast(factor / original, work_dtype) * length - (factor - 1.0)
        return ops.maximum(stretch, ops.ones_like(stretch))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        """The constructor arguments, for saving: ``base``, ``scaling`` (its defaults filled
        in), ``layout``, ``sequence_axis``, ``feature_axis``."""
        config = super().get_config()
        config.update({"base": self.base, "scaling": self.scaling, "layout": self.layout,
                       "sequence_axis": self.sequence_axis, "feature_axis": self.feature_axis})
        return config
