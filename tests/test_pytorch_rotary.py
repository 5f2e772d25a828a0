"""posenc.pytorch.rotary: RotaryEmbedding, against posenc.rope (NumPy) and two independent
references: the package rotary-embedding-torch and Hugging Face's apply_rotary_pos_emb."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
rotary_embedding_torch = pytest.importorskip("rotary_embedding_torch")

import posenc  # noqa: E402
import posenc.relative  # noqa: E402
from posenc.pytorch import RotaryEmbedding  # noqa: E402

from hf_rope_reference import apply_rotary_pos_emb  # noqa: E402
import reference  # noqa: E402
from reference import exactly, randn  # noqa: E402


# --- RotaryEmbedding: against posenc.rope ------------------------------------------------------


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("offset", [0, 7, 5000])
def test_rotary_matches_numpy_in_float64(layout, offset):
    rotary = RotaryEmbedding(16, base=500.0, layout=layout)
    q, k = randn(2, 3, 9, 16, seed=1, dtype=torch.float64), randn(2, 3, 4, 16, seed=2, dtype=torch.float64)
    got_q, got_k = rotary(q, k, offset=offset)
    for got, x in ((got_q, q), (got_k, k)):
        expected = posenc.rope(x.numpy(), base=500.0, offset=offset, layout=layout)
        np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("dtype, tolerance", [
    (torch.float32, 4e-7), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2),
])
def test_rotary_keeps_the_dtype(dtype, tolerance):
    """float32 within a few units in the last place of the float64 result; the half types are
    rotated in float32 and rounded once, so within one of their units (|x| < 2 here)."""
    x = randn(4, 64, 32, seed=3).clamp(-1.9, 1.9).to(dtype)
    got = RotaryEmbedding(32).rotate(x, offset=100)
    assert got.dtype == dtype
    expected = posenc.rope(x.double().numpy(), offset=100)
    assert np.abs(got.double().numpy() - expected).max() <= tolerance


def test_rotary_scores_depend_only_on_the_distance():
    rotary = RotaryEmbedding(16)
    q, k = randn(16, seed=4, dtype=torch.float64), randn(16, seed=5, dtype=torch.float64)
    scores = [(rotary.rotate(q[None], m) @ rotary.rotate(k[None], m + 3).T).item()
              for m in (0, 1, 50, 4000)]
    np.testing.assert_allclose(scores, scores[0], rtol=0, atol=1e-12)


def test_rotary_one_token_at_a_time():
    rotary = RotaryEmbedding(8, layout="half")
    x = randn(1, 12, 8, seed=6)
    full = rotary.rotate(x)
    for t in range(12):
        torch.testing.assert_close(rotary.rotate(x[:, t:t + 1], offset=t), full[:, t:t + 1])


def test_rotary_tables_grow_and_are_cached():
    rotary = RotaryEmbedding(8, max_len=5)
    rotary.rotate(torch.zeros(5, 8))
    assert rotary.max_len == 5
    table = rotary.table()
    rotary.rotate(torch.zeros(3, 8), offset=2)
    assert rotary.table() is table
    rotary.rotate(torch.zeros(3, 8), offset=4)
    assert rotary.max_len == 10
    assert list(rotary.parameters()) == [] and rotary.state_dict() == {}


def test_rotary_on_another_device():
    q = torch.zeros(2, 5, 8, device="meta")
    out_q, out_k = RotaryEmbedding(8)(q, q)
    assert out_q.device.type == "meta" and out_k.shape == (2, 5, 8)


@pytest.mark.parametrize("call, error, message", [
    (lambda: RotaryEmbedding(7), ValueError,
     "head_dim must be even and >= 2 (RoPE rotates pairs of coordinates), got 7"),
    (lambda: RotaryEmbedding(8, layout="neox"), ValueError,
     "layout must be 'interleaved' or 'half', got 'neox'"),
    (lambda: RotaryEmbedding(8, base=-1.0), ValueError, "base must be a finite number > 1, got -1.0"),
    (lambda: RotaryEmbedding(64, 128, layout="half"), TypeError,
     "RotaryEmbedding takes max_len as a keyword argument: write RotaryEmbedding(64, max_len=128, "
     "layout='half'), not RotaryEmbedding(64, 128, layout='half')"),
    (lambda: RotaryEmbedding(8)(torch.zeros(3, 8), torch.zeros(3, 6)), ValueError,
     "k's last dimension is 6 but head_dim=8; they must be equal"),
    (lambda: RotaryEmbedding(8)(torch.zeros(3, 8, dtype=torch.int64), torch.zeros(3, 8)), TypeError,
     "q must be a floating-point torch.Tensor of shape (..., seq_len, head_dim), got Tensor of "
     "dtype torch.int64"),
    (lambda: RotaryEmbedding(8).rotate(torch.zeros(3, 6)), ValueError,
     "x's last dimension is 6 but head_dim=8; they must be equal"),
    (lambda: RotaryEmbedding(8).rotate(torch.zeros(3, 8, dtype=torch.int32)), TypeError,
     "x must be a floating-point torch.Tensor of shape (..., seq_len, head_dim), got Tensor of "
     "dtype torch.int32"),
    (lambda: RotaryEmbedding(8).rotate(torch.zeros(8)), ValueError,
     "x must have shape (..., seq_len, head_dim) with at least 2 dimensions, got shape (8,)"),
    (lambda: RotaryEmbedding(8).rotate(torch.zeros(3, 8), offset=-2), ValueError,
     "offset must be an integer >= 0, got -2"),
])
def test_rotary_errors(call, error, message):
    with pytest.raises(error, match=exactly(message)):
        call()


# --- RotaryEmbedding: against rotary-embedding-torch (Phil Wang's package, interleaved pairs) ----


def half_to_interleaved(d):
    return torch.arange(d).reshape(2, d // 2).T.reshape(-1)  # [0, d/2, 1, d/2 + 1, ...]


@pytest.mark.parametrize("offset", [0, 100])
def test_rotary_agrees_with_rotary_embedding_torch(offset):
    """Its default float32 frequencies and angles: agreement to float32 rounding at short positions."""
    theirs = rotary_embedding_torch.RotaryEmbedding(dim=32)
    x = randn(2, 4, 64, 32, seed=7)
    expected = theirs.rotate_queries_or_keys(x, offset=offset)
    got = RotaryEmbedding(32).rotate(x, offset=offset)
    assert (got - expected).abs().max().item() < 1e-4


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rotary_agrees_with_rotary_embedding_torch_in_float64(layout):
    """Given float64 frequencies (its own formula, 1 / base ** (arange(0, d, 2) / d)) and
    without its float32 cache, it agrees to float64 rounding, up to position 4095. Its
    pairs are interleaved; the half layout agrees after the fixed permutation of columns."""
    d, base = 32, 10000.0
    frequencies = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    theirs = rotary_embedding_torch.RotaryEmbedding(dim=d, custom_freqs=frequencies,
                                                    cache_if_possible=False)
    x = randn(2, 4096, d, seed=8, dtype=torch.float64)
    got = RotaryEmbedding(d, base=base, layout=layout).rotate(x)
    perm = half_to_interleaved(d) if layout == "half" else torch.arange(d)
    expected = theirs.rotate_queries_or_keys(x[..., perm])
    assert (got[..., perm] - expected).abs().max().item() < 1e-11


# --- Compilers ----------------------------------------------------------------------------------


def test_torch_export():
    q = randn(2, 5, 8, seed=12)
    rotary = RotaryEmbedding(8, layout="half")
    exported = torch.export.export(rotary, (q, q)).module()  # before any call: tables built while tracing
    for got, expected in zip(exported(q, q), rotary(q, q)):
        torch.testing.assert_close(got, expected)


def test_torch_compile_rotary():
    rotary = RotaryEmbedding(8)
    q = randn(2, 5, 8, seed=13)
    compiled = torch.compile(rotary)
    for offset in (0, 3):
        for got, expected in zip(compiled(q, q, offset), rotary(q, q, offset)):
            torch.testing.assert_close(got, expected)


# --- RotaryEmbedding: tensor offsets and positions, as PositionalEncoding --------------------------


def test_rotary_tensor_offset_equals_int_offset():
    rotary = RotaryEmbedding(8, max_len=10)
    x = randn(2, 4, 8, seed=14)
    for offset in (0, 3, 8, 50, 2**40):  # in, across and far past the table
        torch.testing.assert_close(rotary.rotate(x, torch.tensor(offset)), rotary.rotate(x, offset),
                                   rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rotary_positions_of_a_left_padded_batch(layout):
    rotary = RotaryEmbedding(16, max_len=8, layout=layout)
    x = randn(2, 3, 5, 16, seed=15, dtype=torch.float64)  # (batch, heads, seq_len, head_dim)
    positions = torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 40]])[:, None]  # (batch, 1, seq_len)
    got = rotary.rotate(x, positions=positions)
    for b in range(2):
        for t in range(5):
            expected = posenc.rope(x[b, :, t:t + 1].numpy(), offset=int(positions[b, 0, t]), layout=layout)
            np.testing.assert_allclose(got[b, :, t:t + 1].numpy(), expected, rtol=0, atol=1e-15)
    assert rotary.max_len == 8  # 33 new rows for 10 positions: position 40 computed on its own
    q_rot, k_rot = rotary(x, x, positions=positions)
    torch.testing.assert_close(q_rot, got, rtol=0, atol=0)


def test_rotary_exact_to_float32_at_long_positions():
    """Each rotation uses the float32 values nearest to the float64 cosine and sine of the angles
    of posenc.rope, however far the position (here past the table: computed on their own)."""
    rotary = RotaryEmbedding(8, max_len=4)
    x = torch.ones(3, 8)
    for start in (10**6, 10**9, 2**40):
        got = rotary.rotate(x, offset=start)
        cos, sin = (t.astype(np.float32) for t in posenc.relative.rope_cos_sin(3, 8, offset=start))
        np.testing.assert_array_equal(got[:, 0::2].numpy(), cos - sin)
        np.testing.assert_array_equal(got[:, 1::2].numpy(), sin + cos)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"positions": torch.zeros(5)}, TypeError,
     "positions must be an integer torch.Tensor of shape (..., seq_len), got a tensor of dtype torch.float32"),
    ({"positions": torch.arange(4)}, ValueError, "positions must have shape (..., seq_len) with "
     "seq_len=5, broadcastable to the input's (2, 5), got shape (4,); this module reads the "
     "sequence from axis -2 of x (axes='bhsd'), and 2-D positions of a 4-D x as (batch, seq_len)"),
    ({"positions": torch.tensor([0, 1, -2, 3, 4])}, ValueError, "positions must be >= 0, got a minimum of -2"),
    ({"positions": torch.arange(5), "offset": 2}, ValueError, "pass either offset or positions, not both"),
    ({"offset": torch.tensor(1.0)}, TypeError,
     "offset must be an integer or an integer tensor, got a tensor of dtype torch.float32"),
    ({"offset": torch.tensor([1])}, ValueError, "offset must be a scalar (0-dimensional) tensor, got shape (1,)"),
    ({"offset": torch.tensor(-1)}, ValueError, "offset must be an integer >= 0, got -1"),
])
def test_rotary_offset_and_positions_errors(kwargs, error, message):
    rotary = RotaryEmbedding(8, max_len=10)
    with pytest.raises(error, match=exactly(message)):
        rotary.rotate(torch.zeros(2, 5, 8), **kwargs)
    assert rotary.max_len == 10


# --- RotaryEmbedding: axis orders and Hugging Face's position ids ----------------------------------


def hf_cos_sin(position_ids, head_dim, base=10000.0):
    """cos and sin as transformers' Llama builds them, ``(batch, seq_len, head_dim)``, but in
    float64 from the float64 frequencies (Hugging Face computes them in float32)."""
    inv_freq = torch.from_numpy(posenc.angular_frequencies(head_dim, base=base)[0::2])
    freqs = position_ids.to(torch.float64)[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def test_rotary_hugging_face_position_ids_of_left_padded_rows():
    """(batch, seq_len) position ids with q of (batch, heads, seq_len, head_dim), batch equal
    to heads (the case that used to mix rows and heads silently): transformers' own
    apply_rotary_pos_emb (vendored) gives the same result."""
    rotary = RotaryEmbedding(16, max_len=8, layout="half")
    q, k = randn(3, 3, 5, 16, seed=30, dtype=torch.float64), randn(3, 3, 5, 16, seed=31, dtype=torch.float64)
    position_ids = torch.tensor([[0, 0, 0, 1, 2], [0, 0, 1, 2, 3], [0, 1, 2, 3, 4]])
    cos, sin = hf_cos_sin(position_ids, 16)
    expected = apply_rotary_pos_emb(q, k, cos, sin)
    for got, want in zip(rotary(q, k, positions=position_ids), expected):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-13)


def test_rotary_bshd_equals_bhsd_transposed_and_hugging_face():
    """axes="bshd": (batch, seq_len, heads, head_dim), as keras-hub, torchtune, lucidrains
    (seq_before_head_dim=True) and Meta's reference lay tensors out; Hugging Face's function
    with unsqueeze_dim=2 is the reference."""
    bhsd = RotaryEmbedding(8, max_len=4, layout="half")
    bshd = RotaryEmbedding(8, max_len=4, layout="half", axes="bshd")
    q = randn(2, 6, 3, 8, seed=32, dtype=torch.float64)  # (batch, seq_len, heads, head_dim)
    for offset in (0, 5):
        expected = bhsd.rotate(q.transpose(1, 2), offset).transpose(1, 2)
        torch.testing.assert_close(bshd.rotate(q, offset), expected, rtol=0, atol=0)
    position_ids = torch.tensor([[0, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5]])
    cos, sin = hf_cos_sin(position_ids, 8)
    want, _ = apply_rotary_pos_emb(q, q, cos, sin, unsqueeze_dim=2)
    torch.testing.assert_close(bshd.rotate(q, positions=position_ids), want, rtol=0, atol=1e-13)
    assert "axes='bshd'" in repr(bshd)


def test_rotary_axes_are_checked_where_the_shapes_allow():
    bshd = RotaryEmbedding(8, axes="bshd")
    with pytest.raises(ValueError, match=exactly(
            "with axes='bshd', x must have shape (..., seq_len, heads, head_dim), got shape (5, 8)")):
        bshd.rotate(torch.zeros(5, 8))
    # (batch, heads, seq_len, head_dim) given to a "bshd" module: 7 positions, axis -3 has 4.
    with pytest.raises(ValueError, match=r"axis -3 of x \(axes='bshd'\)"):
        bshd.rotate(torch.zeros(2, 4, 7, 8), positions=torch.arange(7))
    for bad, error in (("sbhd", ValueError), (2, TypeError)):
        with pytest.raises(error, match="axes must be 'bhsd'"):
            RotaryEmbedding(8, axes=bad)


# --- RotaryEmbedding(scaling=...): longer contexts (posenc.rope_frequencies) ----------------------

#: One setting of every type, for a model trained on 16 positions and run on 4 times as many.
SCALINGS = {
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 16},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
    "llama3": {"rope_type": "llama3", "factor": 4.0, "original_max_position_embeddings": 16,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0},
}


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("offset", [0, 5000])
@pytest.mark.parametrize("name", SCALINGS)
def test_rotary_scaled_matches_numpy_in_float64(name, offset, layout):
    """q and k of other lengths: each rotated for its own positions (for "dynamic", its own
    sequence length offset + seq_len, as posenc.rope takes it)."""
    rotary = RotaryEmbedding(16, max_len=8, layout=layout, scaling=SCALINGS[name])
    q, k = randn(2, 3, 9, 16, seed=40, dtype=torch.float64), randn(2, 3, 4, 16, seed=41, dtype=torch.float64)
    for got, x in zip(rotary(q, k, offset=offset), (q, k)):
        expected = posenc.rope(x.numpy(), offset=offset, layout=layout, scaling=SCALINGS[name])
        # dynamic: the same angles rounded in another order, within pos * 2**-50
        np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-15 + (offset + 9) * 2.0**-50)
    assert f"scaling={rotary.scaling!r}" in repr(rotary)


@pytest.fixture(scope="module")
def llama_rotary():
    """transformers' ``(LlamaRotaryEmbedding, apply_rotary_pos_emb)``, imported once (1.5 s)."""
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb as hf_apply
    return LlamaRotaryEmbedding, hf_apply


@pytest.mark.parametrize("name", SCALINGS)
def test_rotary_scaled_equals_transformers(llama_rotary, name):
    """layout="half": transformers' rotary embedding (cos and sin times its attention factor)
    then apply_rotary_pos_emb, on 40 positions of a model trained on 16, one row left-padded.
    transformers computes its angles in float32, hence the tolerance."""
    LlamaRotaryEmbedding, hf_apply = llama_rotary
    q, k = randn(2, 4, 40, 16, seed=42), randn(2, 4, 40, 16, seed=43)
    position_ids = torch.stack((torch.arange(40), (torch.arange(40) - 5).clamp(min=0)))
    theirs = LlamaRotaryEmbedding(reference.llama_config(16, 10000.0, SCALINGS[name]))
    cos, sin = theirs(q, position_ids)
    expected = hf_apply(q, k, cos, sin)
    rotary = RotaryEmbedding(16, layout="half", scaling=SCALINGS[name])
    for got, want in zip(rotary(q, k, positions=position_ids), expected):
        torch.testing.assert_close(got, want, rtol=0, atol=2e-5)
    assert (rotary.attention_factor != 1.0) == (name == "yarn")


def test_rotary_dynamic_follows_the_length_of_each_call():
    """Up to the original length, dynamic is plain RoPE; past it, the longer the sequence the
    slower its pairs turn; no call changes the next one (no state)."""
    dynamic = RotaryEmbedding(16, scaling=SCALINGS["dynamic"])
    x = randn(1, 64, 16, seed=44, dtype=torch.float64)
    torch.testing.assert_close(dynamic.rotate(x[:, :16]), RotaryEmbedding(16).rotate(x[:, :16]),
                               rtol=0, atol=1e-15)
    long = dynamic.rotate(x)
    assert not torch.allclose(long[:, :16], dynamic.rotate(x[:, :16]))
    torch.testing.assert_close(dynamic.rotate(x[:, :16]), RotaryEmbedding(16).rotate(x[:, :16]),
                               rtol=0, atol=1e-15)
    torch.testing.assert_close(dynamic.rotate(x), long, rtol=0, atol=0)
    # positions: the sequence length is the largest position plus one, offset + seq_len alike
    torch.testing.assert_close(dynamic.rotate(x[:, 60:], positions=torch.arange(60, 64)),
                               dynamic.rotate(x[:, 60:], offset=60), rtol=0, atol=0)


@pytest.mark.parametrize("name", [None, "linear", "yarn", "llama3"])
def test_rotary_scaled_exact_to_float32_at_long_positions(name):
    """The fixed scalings keep the table's exactness: the float32 values nearest to the
    float64 cosine and sine of the scaled angles, however far the position (then times the
    attention factor, in float32)."""
    scaling = SCALINGS.get(name)
    rotary = RotaryEmbedding(8, max_len=4, scaling=scaling)
    frequencies, factor = posenc.rope_frequencies(8, scaling=scaling)
    x = torch.ones(3, 8)
    for start in (10**6, 10**9, 2**40):
        got = rotary.rotate(x, offset=start).numpy()
        angles = (start + np.arange(3.0))[:, None] * frequencies
        cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        np.testing.assert_array_equal(got[:, 0::2], (cos - sin) * np.float32(factor))
        np.testing.assert_array_equal(got[:, 1::2], (sin + cos) * np.float32(factor))


def test_rotary_scaling_errors():
    with pytest.raises(ValueError, match="scaling\\['rope_type'\\] must be one of"):
        RotaryEmbedding(8, scaling={"rope_type": "ntk", "factor": 2.0})
    with pytest.raises(TypeError, match="scaling must be None or a dict"):
        RotaryEmbedding(8, scaling=4.0)
    with pytest.raises(ValueError, match="offset must be an integer >= 0, got -1"):
        RotaryEmbedding(8, scaling=SCALINGS["dynamic"]).rotate(torch.zeros(3, 8), offset=torch.tensor(-1))
    with pytest.raises(ValueError, match="positions must be >= 0, got a minimum of -2"):
        RotaryEmbedding(8, scaling=SCALINGS["dynamic"]).rotate(torch.zeros(3, 8), positions=torch.tensor([0, -2, 1]))


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs an 80-bit long double")
def test_eager_float32_rows_exact_to_2_26_then_the_float64_angle_rounding():
    """The docstring's bound, measured: float32 cos/sin of posenc's float64 frequencies
    (Llama 3.1's head) against the exact angles (long double) of the same frequencies."""
    module = RotaryEmbedding(128, max_len=0, base=500000.0, layout="half")
    frequencies = module._frequencies.astype(np.longdouble)

    def error(power: int) -> float:
        positions = np.arange(2**power - 64, 2**power, dtype=np.int64)
        rows = module._rows_at(torch.from_numpy(positions), torch.float32,
                               torch.device("cpu")).double().numpy()
        angles = positions.astype(np.longdouble)[:, None] * frequencies
        exact = np.stack((np.sin(angles), np.cos(angles)), -1).reshape(len(positions), -1)
        return float(np.abs(rows - exact.astype(np.float64)).max())

    assert error(26) <= 2**-25 * 1.03  # one float32 rounding (3.0e-8)
    assert error(29) <= 2**-24
    assert 2**40 * 2**-56 < error(40) <= 2**40 * 2**-53  # 6.1e-5: the float64 angle's rounding
