"""Scaled dot-product attention in NumPy, and the four terms of a score with added positions.

The chapter "How attention reads positions" (``book/attention.ipynb``) builds attention from
these functions:

- :func:`softmax`: turns a row of scores into weights that are positive and sum to 1.
- :func:`causal_mask`: the boolean mask of a decoder, where position ``m`` sees ``n <= m``.
- :func:`scaled_dot_product_attention`: ``softmax(Q K^T / sqrt(d_head)) V`` for one head (or
  a batch of heads), with an optional mask (Vaswani et al. 2017, section 3.2.1).
- :func:`layer_norm_parts`: a layer normalisation of ``content + position`` written as a
  content part plus a position part, for models that normalise before attention.
- :func:`score_terms`: the score of query position ``m`` with key position ``n`` when the
  token vectors are ``e + p`` (content plus position), split into content-content,
  content-position, position-content and position-position (Dai et al. 2019,
  "Transformer-XL", section 3.3).

Shapes follow the course's conventions: ``(..., seq_len, d_model)`` for token vectors,
``(d_model, d_head)`` for a projection matrix (a row vector times the matrix gives the
projected row), ``(..., seq_len, seq_len)`` for scores and weights, row ``m`` the query
position and column ``n`` the key position. Everything is computed in float64.

This module imports NumPy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import check_int

#: Score given to masked pairs before the softmax: their weight becomes exactly 0.
MASKED = -np.inf


def _as_float_array(name: str, value, *, min_ndim: int) -> np.ndarray:
    """``value`` as a float64 array of at least ``min_ndim`` dimensions, all entries finite."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged nested lists and the like
        raise TypeError(f"{name} must be an array of real numbers: {error}") from None
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer)
                                   or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must hold real numbers (integer or float dtype), got dtype "
                        f"{array.dtype}")
    if array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape "
                         f"{array.shape}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must hold finite numbers only (no NaN or inf)")
    return array


def softmax(scores, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``: ``exp(s_n) / sum_n' exp(s_n')``, computed stably.

    The largest score of each row is subtracted before ``exp`` (the result is the same, since
    adding one constant to a whole row does not change its softmax), so large scores do not
    overflow. A score of ``-inf`` (a masked pair, see :data:`MASKED`) gets weight exactly 0.

    Args:
        scores: array of real numbers, any shape with at least one dimension; entries finite
            or ``-inf``.
        axis: the axis to normalise over (default the last: one row of scores per query).

    Returns:
        A float64 array of the shape of ``scores``: entries in ``[0, 1]`` that sum to 1 along
        ``axis``.

    Raises:
        TypeError: ``scores`` does not hold real numbers, or ``axis`` is not an int.
        ValueError: ``scores`` has no dimension, holds NaN or ``+inf``, ``axis`` is out of
            range, or a whole row along ``axis`` is ``-inf`` (nothing left to attend to).

    Source: the softmax of Vaswani et al. 2017, equation (1); the shift by the maximum is the
    standard way to evaluate it in floating point.
    """
    if isinstance(scores, (str, bytes)) or scores is None:
        raise TypeError(f"scores must be an array of real numbers, got {type(scores).__name__}")
    array = np.asarray(scores)
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer)
                                   or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"scores must hold real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if array.ndim == 0:
        raise ValueError("scores must have at least one dimension, got a scalar")
    axis = check_int("axis", axis, minimum=None)
    if not -array.ndim <= axis < array.ndim:
        raise ValueError(f"axis {axis} is out of range for scores of shape {array.shape}")
    if np.any(np.isnan(array)) or np.any(array == np.inf):
        raise ValueError("scores must be finite or -inf (masked), got NaN or +inf")
    peak = array.max(axis=axis, keepdims=True)
    if np.any(peak == -np.inf):
        raise ValueError("a row of scores is -inf everywhere: every key of some query is "
                         "masked, so there is nothing to attend to")
    weights = np.exp(array - peak)
    return weights / weights.sum(axis=axis, keepdims=True)


def causal_mask(seq_len: int) -> np.ndarray:
    """The causal mask of a decoder: query position ``m`` may attend to key positions ``n <= m``.

    Args:
        seq_len: number of positions, an ``int >= 1``.

    Returns:
        A boolean array of shape ``(seq_len, seq_len)``: entry ``[m, n]`` is ``True`` where
        query ``m`` may look at key ``n`` (on and below the diagonal), ``False`` above it.

    Raises:
        TypeError: ``seq_len`` is not an integer.
        ValueError: ``seq_len < 1``.

    Source: Vaswani et al. 2017, section 3.2.3 (the decoder's masked self-attention).
    """
    seq_len = check_int("seq_len", seq_len, minimum=1)
    return np.tril(np.ones((seq_len, seq_len), dtype=bool))


def scaled_dot_product_attention(query, key, value, *, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention: ``weights = softmax(Q K^T / sqrt(d_head))``, output ``weights V``.

    Leading dimensions (a batch, several heads) broadcast: ``query`` of shape
    ``(..., seq_len_q, d_head)`` and ``key`` of ``(..., seq_len_k, d_head)`` give scores of
    ``(..., seq_len_q, seq_len_k)``.

    Args:
        query: the queries, one row per query position, shape ``(..., seq_len_q, d_head)``.
        key: the keys, shape ``(..., seq_len_k, d_head)``, the same ``d_head``.
        value: the values, shape ``(..., seq_len_k, d_value)``.
        mask: ``None`` (every query sees every key), or a boolean array broadcastable to
            ``(..., seq_len_q, seq_len_k)``, ``True`` where the query may attend to the key
            (for instance :func:`causal_mask`). Masked scores become :data:`MASKED` before
            the softmax, so their weights are exactly 0.

    Returns:
        ``(output, weights)``: ``output`` of shape ``(..., seq_len_q, d_value)``, each row the
        weighted mean of the value rows; ``weights`` of shape ``(..., seq_len_q,
        seq_len_k)``, each row summing to 1. Both float64.

    Raises:
        TypeError: an input does not hold real numbers, or ``mask`` is not boolean.
        ValueError: an input has fewer than 2 dimensions or holds NaN or inf; ``query`` and
            ``key`` differ in ``d_head``; ``key`` and ``value`` differ in ``seq_len_k``; the
            shapes do not broadcast; or the mask hides every key of some query.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.2.1, equation (1).
    """
    query = _as_float_array("query", query, min_ndim=2)
    key = _as_float_array("key", key, min_ndim=2)
    value = _as_float_array("value", value, min_ndim=2)
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query and key must have the same last dimension d_head, got "
                         f"{query.shape[-1]} and {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value must have the same number of positions, got "
                         f"{key.shape[-2]} and {value.shape[-2]}")
    try:
        scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    except ValueError as error:
        raise ValueError(f"the leading dimensions of query {query.shape} and key {key.shape} "
                         f"do not broadcast: {error}") from None
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise TypeError(f"mask must be a boolean array (True: may attend), got dtype "
                            f"{mask.dtype}")
        try:
            scores = np.where(mask, scores, MASKED)
        except ValueError:
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to the scores' "
                             f"shape {scores.shape}") from None
    weights = softmax(scores, axis=-1)
    return weights @ value, weights


def layer_norm_parts(content, position, weight, bias, *, eps: float = 1e-5
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Split ``LayerNorm(content + position)`` into a content part and a position part.

    A layer normalisation maps a vector ``x`` of width ``d_model`` to
    ``weight * (x - mean(x)) / sqrt(var(x) + eps) + bias``. For one token the divisor is a
    single number, so with ``x = e + p`` the result is exactly::

        weight * (e - mean(e)) / sigma  +  bias      (content part)
      + weight * (p - mean(p)) / sigma               (position part)

    with ``sigma = sqrt(var(e + p) + eps)``. The bias goes to the content part: it does not
    depend on the position. The split is exact, but the content part still depends a little
    on the position through ``sigma``.

    Args:
        content: token (content) vectors ``e``, shape ``(..., seq_len, d_model)``.
        position: position vectors ``p``, broadcastable to the shape of ``content``.
        weight: the layer norm's gain, shape ``(d_model,)``.
        bias: the layer norm's bias, shape ``(d_model,)``.
        eps: the small number added to the variance (PyTorch's default ``1e-5``), a finite
            ``float >= 0``.

    Returns:
        ``(content_part, position_part)``, two float64 arrays of the broadcast shape, whose
        sum is ``LayerNorm(content + position)``.

    Raises:
        TypeError: an input does not hold real numbers.
        ValueError: NaN or inf in an input; ``content`` and ``position`` do not broadcast;
            ``weight`` or ``bias`` is not of shape ``(d_model,)``; a bad ``eps``.

    Source: Ba, Kiros and Hinton 2016, "Layer Normalization", equation (4), as implemented by
    ``torch.nn.LayerNorm`` (biased variance).
    """
    content = _as_float_array("content", content, min_ndim=1)
    position = _as_float_array("position", position, min_ndim=1)
    weight = _as_float_array("weight", weight, min_ndim=1)
    bias = _as_float_array("bias", bias, min_ndim=1)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < np.inf:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    try:
        total = content + position
    except ValueError:
        raise ValueError(f"content {content.shape} and position {position.shape} do not "
                         f"broadcast") from None
    d_model = total.shape[-1]
    for name, array in (("weight", weight), ("bias", bias)):
        if array.shape != (d_model,):
            raise ValueError(f"{name} must have shape (d_model,) = ({d_model},), got "
                             f"{array.shape}")
    sigma = np.sqrt(total.var(axis=-1, keepdims=True) + eps)
    if np.any(sigma == 0):
        raise ValueError("a token vector content + position is constant and eps is 0: its "
                         "layer normalisation divides by 0")
    content_part = weight * (content - content.mean(axis=-1, keepdims=True)) / sigma + bias
    position_part = weight * (position - position.mean(axis=-1, keepdims=True)) / sigma
    return np.broadcast_to(content_part, total.shape).copy(), np.broadcast_to(
        position_part, total.shape).copy()


class ScoreTerms(NamedTuple):
    """The four terms of an attention score, each of shape ``(..., seq_len, seq_len)``.

    Entry ``[m, n]`` of each term is its share of the score of query position ``m`` with key
    position ``n``; the four add up to the score (see :func:`score_terms`).
    """

    content_content: np.ndarray
    content_position: np.ndarray
    position_content: np.ndarray
    position_position: np.ndarray

    def total(self) -> np.ndarray:
        """The score: the sum of the four terms."""
        return (self.content_content + self.content_position + self.position_content
                + self.position_position)


def score_terms(content, position, w_query, w_key, *, b_query=None, b_key=None) -> ScoreTerms:
    """The score of every query position ``m`` with every key position ``n``, in four terms.

    With token vectors ``x_m = e_m + p_m`` (content plus position) and the projections
    ``q_m = x_m W_Q + b_Q`` and the key ``u_n = x_n W_K + b_K`` (row vectors; the course
    keeps the letter ``k`` for a shift), the scaled score ``q_m . u_n / sqrt(d_head)`` is
    the sum of::

        content_content    (e_m W_Q + b_Q) . (e_n W_K + b_K) / sqrt(d_head)
        content_position   (e_m W_Q + b_Q) . (p_n W_K)       / sqrt(d_head)
        position_content   (p_m W_Q)       . (e_n W_K + b_K) / sqrt(d_head)
        position_position  (p_m W_Q)       . (p_n W_K)       / sqrt(d_head)

    The biases, which depend on neither the token nor the position, are counted with the
    content (they are zero when not given).

    Args:
        content: the content vectors ``e``, shape ``(..., seq_len, d_model)``.
        position: the position vectors ``p``, broadcastable to ``content``'s shape (for
            instance ``(seq_len, d_model)`` for a batch of sequences).
        w_query: the query projection ``W_Q``, shape ``(d_model, d_head)``.
        w_key: the key projection ``W_K``, shape ``(d_model, d_head)``.
        b_query: the query bias ``b_Q``, shape ``(d_head,)``, or ``None`` (no bias).
        b_key: the key bias ``b_K``, shape ``(d_head,)``, or ``None``.

    Returns:
        A :class:`ScoreTerms` of four float64 arrays of shape ``(..., seq_len, seq_len)``
        (row ``m``: query position, column ``n``: key position); ``.total()`` is the score.

    Raises:
        TypeError: an input does not hold real numbers.
        ValueError: NaN or inf in an input; ``content`` and ``position`` do not broadcast;
            the projections are not ``(d_model, d_head)`` with the inputs' ``d_model`` and one
            ``d_head``; a bias is not of shape ``(d_head,)``.

    Source: the expansion of the score with absolute positions in Dai et al. 2019,
    "Transformer-XL", section 3.3 (terms (a) to (d)), here with the scaling by
    ``sqrt(d_head)`` of Vaswani et al. 2017, equation (1).
    """
    content = _as_float_array("content", content, min_ndim=2)
    position = _as_float_array("position", position, min_ndim=2)
    w_query = _as_float_array("w_query", w_query, min_ndim=2)
    w_key = _as_float_array("w_key", w_key, min_ndim=2)
    try:
        shape = np.broadcast_shapes(content.shape, position.shape)
    except ValueError:
        raise ValueError(f"content {content.shape} and position {position.shape} do not "
                         f"broadcast") from None
    d_model = shape[-1]
    if w_query.ndim != 2 or w_key.ndim != 2 or w_query.shape[0] != d_model \
            or w_query.shape != w_key.shape:
        raise ValueError(f"w_query and w_key must both have shape (d_model, d_head) with "
                         f"d_model = {d_model}, got {w_query.shape} and {w_key.shape}")
    d_head = w_query.shape[1]
    biases = []
    for name, bias in (("b_query", b_query), ("b_key", b_key)):
        bias = np.zeros(d_head) if bias is None else _as_float_array(name, bias, min_ndim=1)
        if bias.shape != (d_head,):
            raise ValueError(f"{name} must have shape (d_head,) = ({d_head},), got {bias.shape}")
        biases.append(bias)
    scale = np.sqrt(d_head)
    query_content, query_position = content @ w_query + biases[0], position @ w_query
    key_content, key_position = content @ w_key + biases[1], position @ w_key

    def scores(queries, keys):
        result = queries @ np.swapaxes(keys, -1, -2) / scale
        return np.broadcast_to(result, (*shape[:-1], shape[-2])).copy()

    return ScoreTerms(scores(query_content, key_content), scores(query_content, key_position),
                      scores(query_position, key_content), scores(query_position, key_position))
