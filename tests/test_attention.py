"""posenc.attention: softmax, causal mask, scaled dot-product attention, the four score terms."""

import math

import numpy as np
import pytest

import posenc
from posenc.attention import (
    MASKED,
    ScoreTerms,
    causal_mask,
    layer_norm_parts,
    scaled_dot_product_attention,
    score_terms,
    softmax,
)

RNG = np.random.default_rng(20261124)


# --- softmax ----------------------------------------------------------------------------------


def test_softmax_values_against_the_definition():
    scores = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, math.log(2.0)]])
    expected = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    assert np.allclose(softmax(scores), expected, rtol=1e-15)
    assert np.allclose(softmax(scores)[1], [0.25, 0.25, 0.5])
    assert np.allclose(softmax(scores.T, axis=0), expected.T)


def test_softmax_is_stable_and_shift_invariant():
    scores = RNG.normal(size=(4, 7))
    assert np.allclose(softmax(scores + 1000.0), softmax(scores))  # no overflow
    assert np.allclose(softmax(scores - 1000.0), softmax(scores))  # no 0 / 0
    weights = softmax(scores)
    assert np.allclose(weights.sum(axis=-1), 1.0) and weights.min() > 0


def test_softmax_masked_entries_get_zero_weight():
    weights = softmax([[0.0, MASKED, 1.0]])
    assert weights[0, 1] == 0.0
    assert np.allclose(weights[0, [0, 2]], softmax([[0.0, 1.0]])[0])
    assert softmax([3, 3]).dtype == np.float64   # integers are accepted


@pytest.mark.parametrize("bad, error, message", [
    ("abc", TypeError, "array of real numbers"),
    (None, TypeError, "array of real numbers"),
    ([True, False], TypeError, "real numbers"),
    ([1 + 2j], TypeError, "real numbers"),
    (3.0, ValueError, "at least one dimension"),
    ([1.0, np.nan], ValueError, "NaN or \\+inf"),
    ([1.0, np.inf], ValueError, "NaN or \\+inf"),
    ([[MASKED, MASKED], [0.0, 1.0]], ValueError, "nothing to attend to"),
])
def test_softmax_errors(bad, error, message):
    with pytest.raises(error, match=message):
        softmax(bad)


def test_softmax_axis_errors():
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        softmax(np.zeros((2, 2)), axis=2)
    with pytest.raises(TypeError):
        softmax(np.zeros((2, 2)), axis=1.0)


# --- causal mask ------------------------------------------------------------------------------


def test_causal_mask():
    mask = causal_mask(4)
    assert mask.dtype == bool and mask.shape == (4, 4)
    for m in range(4):
        for n in range(4):
            assert mask[m, n] == (n <= m)
    assert causal_mask(1).tolist() == [[True]]


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError), (2.0, TypeError),
                                        ("4", TypeError)])
def test_causal_mask_errors(bad, error):
    with pytest.raises(error, match="seq_len"):
        causal_mask(bad)


# --- attention --------------------------------------------------------------------------------


def reference_attention(query, key, value, mask=None):
    """Loops over queries and keys, written from Vaswani et al. 2017, equation (1)."""
    d_head = len(query[0])
    output, weights = [], []
    for m, q in enumerate(query):
        scores = [sum(a * b for a, b in zip(q, k)) / math.sqrt(d_head) for k in key]
        allowed = [n for n in range(len(key)) if mask is None or mask[m][n]]
        total = sum(math.exp(scores[n]) for n in allowed)
        row = [math.exp(scores[n]) / total if n in allowed else 0.0 for n in range(len(key))]
        weights.append(row)
        output.append([sum(row[n] * value[n][c] for n in range(len(key)))
                       for c in range(len(value[0]))])
    return np.array(output), np.array(weights)


@pytest.mark.parametrize("masked", [False, True])
def test_attention_against_loops(masked):
    query, key = RNG.normal(size=(2, 6, 4))
    value = RNG.normal(size=(6, 3))
    mask = causal_mask(6) if masked else None
    output, weights = scaled_dot_product_attention(query, key, value, mask=mask)
    expected_output, expected_weights = reference_attention(query, key, value, mask)
    assert output.shape == (6, 3) and weights.shape == (6, 6)
    assert np.allclose(output, expected_output, atol=1e-12)
    assert np.allclose(weights, expected_weights, atol=1e-12)
    if masked:
        assert np.all(weights[~causal_mask(6)] == 0.0)
        assert np.allclose(output[0], value[0])  # the first query sees only itself


def test_attention_broadcasts_over_batches_and_heads():
    query = RNG.normal(size=(2, 3, 5, 4))   # (batch, heads, seq_len, d_head)
    key = RNG.normal(size=(2, 3, 7, 4))
    value = RNG.normal(size=(2, 3, 7, 6))
    output, weights = scaled_dot_product_attention(query, key, value)
    assert output.shape == (2, 3, 5, 6) and weights.shape == (2, 3, 5, 7)
    single, single_weights = scaled_dot_product_attention(query[1, 2], key[1, 2], value[1, 2])
    assert np.allclose(output[1, 2], single) and np.allclose(weights[1, 2], single_weights)


def test_attention_without_positions_is_permutation_equivariant():
    x = RNG.normal(size=(8, 4))
    order = RNG.permutation(8)
    output, _ = scaled_dot_product_attention(x, x, x)
    shuffled, _ = scaled_dot_product_attention(x[order], x[order], x[order])
    assert np.allclose(shuffled, output[order])


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(query=np.zeros((3, 4)), key=np.zeros((3, 5)), value=np.zeros((3, 2))),
     ValueError, "same last dimension d_head, got 4 and 5"),
    (dict(query=np.zeros((3, 4)), key=np.zeros((3, 4)), value=np.zeros((2, 2))),
     ValueError, "same number of positions, got 3 and 2"),
    (dict(query=np.zeros(4), key=np.zeros((3, 4)), value=np.zeros((3, 2))),
     ValueError, "query must have at least 2"),
    (dict(query=np.zeros((2, 3, 4)), key=np.zeros((3, 3, 4)), value=np.zeros((3, 3, 2))),
     ValueError, "do not broadcast"),
    (dict(query="q", key=np.zeros((3, 4)), value=np.zeros((3, 2))), TypeError, "query"),
    (dict(query=np.full((3, 4), np.nan), key=np.zeros((3, 4)), value=np.zeros((3, 2))),
     ValueError, "finite"),
    (dict(query=np.zeros((3, 4)), key=np.zeros((3, 4)), value=np.zeros((3, 2)),
          mask=np.ones((3, 3))), TypeError, "boolean"),
    (dict(query=np.zeros((3, 4)), key=np.zeros((3, 4)), value=np.zeros((3, 2)),
          mask=np.ones((2, 2), dtype=bool)), ValueError, "does not broadcast"),
    (dict(query=np.zeros((3, 4)), key=np.zeros((3, 4)), value=np.zeros((3, 2)),
          mask=np.zeros((3, 3), dtype=bool)), ValueError, "nothing to attend to"),
])
def test_attention_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        scaled_dot_product_attention(**kwargs)


# --- layer norm parts -------------------------------------------------------------------------


def test_layer_norm_parts_add_up_to_the_layer_norm():
    content = RNG.normal(size=(3, 5, 8))
    position = posenc.positional_encoding(5, 8)
    weight, bias = RNG.normal(size=(2, 8))
    content_part, position_part = layer_norm_parts(content, position, weight, bias, eps=1e-5)
    x = content + position
    expected = weight * (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) + bias
    assert content_part.shape == position_part.shape == (3, 5, 8)
    assert np.allclose(content_part + position_part, expected, atol=1e-12)
    # Without a position vector, the position part is 0 and the content part is the layer norm.
    content_only, zero = layer_norm_parts(content, np.zeros(8), weight, bias)
    assert np.all(zero == 0)
    assert np.allclose(content_only, weight * (content - content.mean(-1, keepdims=True))
                       / np.sqrt(content.var(-1, keepdims=True) + 1e-5) + bias)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(weight=np.ones(3)), ValueError, "weight must have shape \\(d_model,\\) = \\(4,\\)"),
    (dict(bias=np.ones((4, 1))), ValueError, "bias must have shape"),
    (dict(position=np.ones((3, 4))), ValueError, "do not broadcast"),
    (dict(eps=-1.0), ValueError, "eps"),
    (dict(eps=True), ValueError, "eps"),
    (dict(content=np.ones((2, 4)), position=np.zeros(4), eps=0.0), ValueError, "divides by 0"),
    (dict(content="x"), TypeError, "content"),
])
def test_layer_norm_parts_errors(kwargs, error, message):
    arguments = dict(content=RNG.normal(size=(2, 4)), position=np.zeros((2, 4)),
                     weight=np.ones(4), bias=np.zeros(4))
    eps = kwargs.pop("eps", 1e-5)
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        layer_norm_parts(**arguments, eps=eps)


# --- the four terms ---------------------------------------------------------------------------


def test_score_terms_against_the_definition():
    seq_len, d_model, d_head = 6, 8, 4
    content = RNG.normal(size=(2, seq_len, d_model))
    position = posenc.positional_encoding(seq_len, d_model)
    w_query, w_key = RNG.normal(size=(2, d_model, d_head))
    b_query, b_key = RNG.normal(size=(2, d_head))
    terms = score_terms(content, position, w_query, w_key, b_query=b_query, b_key=b_key)
    assert isinstance(terms, ScoreTerms)
    for term in terms:
        assert term.shape == (2, seq_len, seq_len) and term.dtype == np.float64
    b, m, n = 1, 4, 2
    e, p, scale = content[b], position, math.sqrt(d_head)
    expected = [
        (e[m] @ w_query + b_query) @ (e[n] @ w_key + b_key) / scale,
        (e[m] @ w_query + b_query) @ (p[n] @ w_key) / scale,
        (p[m] @ w_query) @ (e[n] @ w_key + b_key) / scale,
        (p[m] @ w_query) @ (p[n] @ w_key) / scale,
    ]
    assert np.allclose([term[b, m, n] for term in terms], expected, atol=1e-12)
    # The four terms add up to the score that attention computes from e + p.
    x = content + position
    _, weights = scaled_dot_product_attention(x @ w_query + b_query, x @ w_key + b_key, x)
    assert np.allclose(posenc.attention.softmax(terms.total()), weights, atol=1e-12)


def test_position_position_with_identity_depends_on_the_shift_only():
    position = posenc.positional_encoding(40, 16)
    terms = score_terms(np.zeros((40, 16)), position, np.eye(16), np.eye(16))
    assert np.all(terms.content_content == 0) and np.all(terms.content_position == 0)
    pp = terms.position_position
    for shift in (-5, 0, 3):
        assert np.allclose(np.diagonal(pp, offset=shift), np.diagonal(pp, offset=shift)[0])
    assert np.allclose(pp, pp.T)
    assert np.isclose(pp[0, 0], 16 / 2 / math.sqrt(16))


def test_score_terms_without_biases_equal_zero_biases():
    content, position = RNG.normal(size=(2, 5, 6))
    w_query, w_key = RNG.normal(size=(2, 6, 3))
    a = score_terms(content, position, w_query, w_key)
    b = score_terms(content, position, w_query, w_key, b_query=np.zeros(3), b_key=np.zeros(3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(w_key=np.ones((6, 2))), ValueError, "w_query and w_key must both have shape"),
    (dict(w_query=np.ones((5, 3)), w_key=np.ones((5, 3))), ValueError, "d_model = 6"),
    (dict(position=np.ones((4, 6))), ValueError, "do not broadcast"),
    (dict(b_query=np.ones(2)), ValueError, "b_query must have shape \\(d_head,\\) = \\(3,\\)"),
    (dict(b_key=np.ones((3, 1))), ValueError, "b_key must have shape"),
    (dict(content=np.ones(6)), ValueError, "content must have at least 2"),
    (dict(w_query=[["a"]]), TypeError, "w_query"),
])
def test_score_terms_errors(kwargs, error, message):
    arguments = dict(content=np.ones((5, 6)), position=np.ones((5, 6)),
                     w_query=np.ones((6, 3)), w_key=np.ones((6, 3)))
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        score_terms(**arguments)


def test_import_imports_numpy_only():
    import subprocess
    import sys
    code = ("import sys, posenc.attention; print(sorted(m for m in ('torch', 'tensorflow', "
            "'keras', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
