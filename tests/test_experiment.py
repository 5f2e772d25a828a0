"""posenc.experiment: the tasks, the tiny model with each encoding wired in, training, errors."""

import re

import pytest

torch = pytest.importorskip("torch")

from posenc import experiment as ex  # noqa: E402
from posenc.experiment import (  # noqa: E402
    accuracy_by_position,
    ENCODINGS,
    MAX_COUNT,
    N_SYMBOLS,
    SHIFT_K,
    TASKS,
    attention_maps,
    build_model,
    evaluate,
    make_batch,
    n_classes,
    train,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def tokens(batch=2, seq_len=12, seed=0):
    return make_batch("shift", batch, seq_len, generator=gen(seed))[0]


# --- tasks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_batch_shapes_dtypes_and_determinism(task):
    x, y = make_batch(task, 5, 16, generator=gen(3))
    assert x.shape == y.shape == (5, 16)
    assert x.dtype == y.dtype == torch.int64
    assert 0 <= int(x.min()) and int(x.max()) < N_SYMBOLS
    assert 0 <= int(y.min()) and int(y.max()) < n_classes(task)
    x2, y2 = make_batch(task, 5, 16, generator=gen(3))
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, make_batch(task, 5, 16, generator=gen(4))[0])


def test_shift_targets_are_the_token_shift_k_back():
    x, y = make_batch("shift", 4, 10, generator=gen())
    assert torch.equal(y[:, SHIFT_K:], x[:, :-SHIFT_K])
    assert bool((y[:, :SHIFT_K] == N_SYMBOLS).all())
    _, short = make_batch("shift", 1, SHIFT_K, generator=gen())  # no position has a token SHIFT_K back
    assert bool((short == N_SYMBOLS).all())


@pytest.mark.parametrize("seq_len", [1, 7, 16, 64])
def test_count_targets_count_occurrences(seq_len):
    x, y = make_batch("count", 8, seq_len, generator=gen(seq_len))
    for row_x, row_y in zip(x.tolist(), y.tolist()):
        assert row_y == [row_x.count(token) - 1 for token in row_x]
    assert int(y.max()) <= MAX_COUNT - 1


def test_count_uses_every_count_at_every_length():
    for seq_len in (16, 64):
        _, y = make_batch("count", 64, seq_len, generator=gen())
        assert set(y.unique().tolist()) == set(range(MAX_COUNT))


def test_n_classes():
    assert n_classes("shift") == N_SYMBOLS + 1
    assert n_classes("count") == MAX_COUNT


def test_task_errors():
    with pytest.raises(ValueError, match="task must be one of 'shift', 'count', got 'sort'"):
        make_batch("sort", 2, 4, generator=gen())
    with pytest.raises(ValueError, match="seq_len must be an integer >= 1, got 0"):
        make_batch("shift", 2, 0, generator=gen())
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        make_batch("shift", 2.0, 4, generator=gen())
    with pytest.raises(ValueError, match=f"seq_len must be <= N_SYMBOLS={N_SYMBOLS}"):
        make_batch("count", 2, N_SYMBOLS + 1, generator=gen())
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        make_batch("shift", 2, 4, generator=0)


# --- the model ------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("task", TASKS)
def test_output_and_attention_shapes(encoding, task):
    model = build_model(encoding, task, d_model=16, n_heads=2, n_layers=2)
    x = tokens(3, 9)
    logits, weights = model(x, return_attention=True)
    assert logits.shape == (3, 9, n_classes(task)) and logits.dtype == torch.float32
    maps = attention_maps(model, x)
    assert len(maps) == len(weights) == 2
    for layer in maps:
        assert layer.shape == (3, 2, 9, 9)
        torch.testing.assert_close(layer.sum(dim=-1), torch.ones(3, 2, 9))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_build_is_seeded_and_leaves_the_global_random_state_alone(encoding):
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first, again = build_model(encoding, "shift", seed=7), build_model(encoding, "shift", seed=7)
    assert torch.equal(torch.get_rng_state(), before)
    other = build_model(encoding, "shift", seed=8)
    for name, value in first.state_dict().items():
        assert torch.equal(value, again.state_dict()[name]), name
    assert not torch.equal(first.embed.weight, other.embed.weight)


def test_each_encoding_is_wired_in():
    x = tokens()
    outputs = {name: build_model(name, "shift", seed=0)(x) for name in ENCODINGS}
    # The same seed gives the same token embeddings and layers; only the positions differ.
    for name in ("learned", "sinusoidal", "rope", "alibi"):
        assert not torch.allclose(outputs[name], outputs["none"]), name
    assert isinstance(build_model("learned", "shift").position, ex.LearnedPositionalEmbedding)
    assert isinstance(build_model("sinusoidal", "shift").position, ex.PositionalEncoding)
    assert isinstance(build_model("rope", "shift").rotary, ex.RotaryEmbedding)


def permuted_outputs_match(model, permutation, x):
    return torch.allclose(model(x[:, permutation]), model(x)[:, permutation], atol=1e-5)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_only_none_is_permutation_equivariant(encoding):
    model = build_model(encoding, "shift", n_layers=2)
    x = tokens(2, 12)
    permutation = torch.randperm(12, generator=gen(1))
    assert permuted_outputs_match(model, permutation, x) == (encoding == "none")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_alibi_cannot_tell_left_from_right(encoding):
    # ALiBi's bias -slope * |i - j| is symmetric: reversing the input reverses the output.
    model = build_model(encoding, "shift", n_layers=2)
    reversal = torch.arange(11, -1, -1)
    assert permuted_outputs_match(model, reversal, tokens(2, 12)) == (encoding in ("none", "alibi"))


def log_weight_ratio(model, x, query, key):
    """log(weight of key / weight of the query's own position) in layer 0, head 0."""
    weights = attention_maps(model, x)[0][0, 0]
    return float(weights[query, key].log() - weights[query, query].log())


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_rope_and_alibi_scores_depend_only_on_the_distance(encoding):
    # Token a at position m and token b at m + 3, at m = 1 and m = 8 among the same filler:
    # with a relative scheme the scores differ by nothing but rounding.
    model = build_model(encoding, "shift", seed=2)
    first = torch.full((1, 14), 5)
    second = first.clone()
    first[0, 1], first[0, 4] = 17, 40
    second[0, 8], second[0, 11] = 17, 40
    ratio_first = log_weight_ratio(model, first, 1, 4)
    ratio_second = log_weight_ratio(model, second, 8, 11)
    if encoding in ("rope", "alibi", "none"):
        assert ratio_first == pytest.approx(ratio_second, abs=1e-5)
    else:
        assert abs(ratio_first - ratio_second) > 1e-3


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_causal_model_reads_earlier_tokens_only(encoding):
    x = tokens(2, 12)
    changed = x.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % N_SYMBOLS          # new tokens from position 7 on
    causal = build_model(encoding, "shift", n_layers=2, causal=True)
    torch.testing.assert_close(causal(changed)[:, :7], causal(x)[:, :7], rtol=0, atol=1e-6)
    assert not torch.allclose(causal(changed)[:, 7:], causal(x)[:, 7:])
    encoder = build_model(encoding, "shift", n_layers=2)
    assert not torch.allclose(encoder(changed)[:, :7], encoder(x)[:, :7])
    weights = attention_maps(causal, x)[0]
    assert torch.all(weights.triu(diagonal=1) == 0)              # no weight on a later key


def test_the_mask_gives_order_to_none_and_direction_to_alibi():
    x = tokens(2, 12)
    permutation = torch.randperm(12, generator=gen(1))
    assert not permuted_outputs_match(build_model("none", "shift", causal=True), permutation, x)
    reversal = torch.arange(11, -1, -1)
    assert not permuted_outputs_match(build_model("alibi", "shift", causal=True), reversal, x)


def test_causal_is_a_bool_shown_in_the_repr():
    assert "causal=True" in repr(build_model("rope", "shift", causal=True))
    assert "causal" not in repr(build_model("rope", "shift"))
    with pytest.raises(TypeError, match="causal must be True or False, got int 1"):
        build_model("none", "shift", causal=1)


def test_the_two_added_encodings_start_at_one_scale():
    learned = build_model("learned", "shift", seed=4).position.embedding.weight.detach()
    sinusoidal = build_model("sinusoidal", "shift").position.table()[:64]
    tokens_rms = build_model("none", "shift", seed=4).embed.weight.detach().pow(2).mean().sqrt()
    for table in (learned, sinusoidal):
        assert abs(table.pow(2).mean().sqrt().item() - 2 ** -0.5) < 0.03
    assert abs(tokens_rms.item() - 1) < 0.05


def test_learned_fails_clearly_past_max_len_others_run():
    message = ("positions 0 to 16 (offset=0, seq_len=17) run past max_len=16: a learned "
               "positional embedding has rows for positions 0 to 15 only")
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate(build_model("learned", "shift", max_len=16), 17)
    for encoding in ("none", "sinusoidal", "rope", "alibi"):
        assert 0.0 <= evaluate(build_model(encoding, "shift", max_len=16), 40, n_sequences=4) <= 1.0


@pytest.mark.parametrize("encoding", ["sinusoidal", "rope"])
def test_base_and_d_model_are_wired_in(encoding):
    x = tokens()
    slow = build_model(encoding, "shift", base=10000.0)
    fast = build_model(encoding, "shift", base=10.0)
    assert fast.base == 10.0
    assert (fast.rotary if encoding == "rope" else fast.position).base == 10.0
    assert not torch.allclose(slow(x), fast(x))
    wide = build_model(encoding, "shift", d_model=48, n_heads=2)
    assert wide.embed.weight.shape == (N_SYMBOLS, 48) and wide(x).shape == (2, 12, N_SYMBOLS + 1)


def test_rope_scaling_is_wired_in():
    """A model trained without scaling takes it by load_state_dict (the rotary embedding has no
    weights); the scaled model gives other outputs, the same up to the original length for
    dynamic NTK, and scaling with another encoding is refused."""
    x = tokens()
    plain = build_model("rope", "shift")
    interpolated = build_model("rope", "shift", rope_scaling={"rope_type": "linear", "factor": 4.0})
    interpolated.load_state_dict(plain.state_dict())
    assert interpolated.rotary.scaling == {"rope_type": "linear", "factor": 4.0}
    assert not torch.allclose(interpolated(x), plain(x))
    dynamic = build_model("rope", "shift", rope_scaling={
        "rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": x.shape[1]})
    dynamic.load_state_dict(plain.state_dict())
    torch.testing.assert_close(dynamic(x), plain(x))
    with pytest.raises(ValueError, match="rope_scaling scales the frequencies of RoPE: it needs "
                                         "encoding='rope', got encoding='sinusoidal'"):
        build_model("sinusoidal", "shift", rope_scaling={"rope_type": "linear", "factor": 2.0})
    with pytest.raises(ValueError, match="scaling of rope_type 'linear' needs the key"):
        build_model("rope", "shift", rope_scaling={"rope_type": "linear"})


def test_build_errors():
    with pytest.raises(ValueError, match="encoding must be one of 'none', 'learned', 'sinusoidal', "
                                         "'rope', 'alibi', got 'nope'"):
        build_model("nope", "shift")
    with pytest.raises(ValueError, match="task must be one of"):
        build_model("rope", 3)
    with pytest.raises(ValueError, match="d_model=30 must be divisible by n_heads=4"):
        build_model("none", "shift", d_model=30)
    with pytest.raises(ValueError, match="head width d_model // n_heads = 3 must be even"):
        build_model("rope", "shift", d_model=12, n_heads=4)
    with pytest.raises(ValueError, match="base must be a finite number > 1"):
        build_model("sinusoidal", "shift", base=0.0)
    with pytest.raises(TypeError, match="d_model must be an integer"):
        build_model("none", "shift", d_model=32.0)
    with pytest.raises(TypeError, match=re.escape(
            "TinyTransformer takes max_len as a keyword argument: write "
            "TinyTransformer('learned', 'shift', max_len=64), not "
            "TinyTransformer('learned', 'shift', 64)")):
        ex.TinyTransformer("learned", "shift", 64)


def test_forward_errors():
    model = build_model("none", "shift")
    with pytest.raises(TypeError, match="tokens must be an integer torch.Tensor of shape "
                                        r"\(batch, seq_len\), got a tensor of dtype torch.float32"):
        model(torch.zeros(2, 3))
    with pytest.raises(TypeError, match="got list"):
        model([[1, 2]])
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, seq_len\), both >= 1, "
                                         r"got shape \(3,\)"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=f"tokens must be in 0 .. {N_SYMBOLS - 1}, got values from "
                                         f"0 to {N_SYMBOLS}"):
        model(torch.tensor([[0, N_SYMBOLS]]))
    with pytest.raises(TypeError, match="model must be a TinyTransformer"):
        evaluate(torch.nn.Linear(2, 2), 4)
    with pytest.raises(ValueError, match="lr must be a finite number > 0, got -1.0"):
        train(model, lr=-1.0)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        train(model, steps=0)


# --- training -------------------------------------------------------------------------------------


def test_training_is_deterministic():
    runs = []
    for _ in range(2):
        model = build_model("rope", "count", seed=1)
        runs.append((train(model, steps=20, seed=5), model))
    assert runs[0][0] == runs[1][0] and len(runs[0][0]) == 20
    for name, value in runs[0][1].state_dict().items():
        assert torch.equal(value, runs[1][1].state_dict()[name]), name
    assert train(build_model("rope", "count", seed=1), steps=20, seed=6) != runs[0][0]


def test_a_short_training_learns_the_shift_only_with_positions():
    # About two seconds: RoPE learns to look SHIFT_K back; without positions the model can do
    # no better than the blank class at every position (SHIFT_K / 16 of the targets).
    accuracy = {}
    for encoding in ("none", "rope"):
        model = build_model(encoding, "shift", seed=0)
        losses = train(model, steps=200, seed=0)
        accuracy[encoding] = evaluate(model, 16, n_sequences=64)
        assert losses[-1] < losses[0]
    assert accuracy["rope"] > 0.9
    assert accuracy["none"] < SHIFT_K / 16 + 0.05


def test_accuracy_by_position_averages_to_evaluate():
    model = build_model("none", "shift")
    by_position = accuracy_by_position(model, 10, n_sequences=32, seed=3)
    assert by_position.shape == (10,) and by_position.dtype == torch.float64
    assert evaluate(model, 10, n_sequences=32, seed=3) == pytest.approx(float(by_position.mean()))
    assert torch.equal(by_position * 32, (by_position * 32).round())  # a count out of 32
    assert bool(((by_position >= 0) & (by_position <= 1)).all())


# --- attention_parameters ---------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["none", "sinusoidal", "learned"])
def test_attention_parameters_rebuild_the_attention_weights(encoding):
    import numpy as np

    import posenc
    from posenc.attention import layer_norm_parts, score_terms, softmax
    from posenc.experiment import attention_parameters

    model = build_model(encoding, "shift", d_model=16, n_heads=2, seed=3)
    x = tokens(batch=3, seq_len=10, seed=5)
    parameters = attention_parameters(model)
    assert parameters["w_query"].shape == (2, 16, 8) and parameters["b_key"].shape == (2, 8)
    assert parameters["embedding"].shape == (N_SYMBOLS, 16)
    assert all(a.dtype == np.float64 for a in parameters.values() if isinstance(a, np.ndarray))
    if encoding == "sinusoidal":
        position = posenc.positional_encoding(10, 16)
    elif encoding == "learned":
        position = model.position.embedding.weight.detach().double().numpy()[:10]
    else:
        position = np.zeros((10, 16))
    content_part, position_part = layer_norm_parts(
        parameters["embedding"][x.numpy()], position, parameters["norm_weight"],
        parameters["norm_bias"], eps=parameters["norm_eps"])
    expected = attention_maps(model, x)[0].double().numpy()
    for head in range(2):
        terms = score_terms(content_part, position_part, parameters["w_query"][head],
                            parameters["w_key"][head], b_query=parameters["b_query"][head],
                            b_key=parameters["b_key"][head])
        assert np.allclose(softmax(terms.total()), expected[:, head], atol=1e-5)
    # A copy: changing it leaves the model as it is.
    parameters["w_query"][:] = 0
    assert not np.allclose(attention_parameters(model)["w_query"], parameters["w_query"])


def test_attention_parameters_value_projection_and_errors():
    import numpy as np

    from posenc.experiment import attention_parameters

    model = build_model("none", "shift", d_model=8, n_heads=2, n_layers=2, seed=0)
    parameters = attention_parameters(model, layer=1)
    block = model.layers[1]
    row = torch.randn(8, generator=gen(1), dtype=torch.float64)
    with torch.no_grad():
        values = (row.float() @ block.qkv.weight.T + block.qkv.bias)[16:].double().numpy()
    got = np.concatenate([row.numpy() @ parameters["w_value"][h] + parameters["b_value"][h]
                          for h in range(2)])
    assert np.allclose(got, values, atol=1e-5)
    assert not np.allclose(parameters["w_query"], attention_parameters(model, 0)["w_query"])
    with pytest.raises(ValueError, match="layer must be from 0 to 1"):
        attention_parameters(model, layer=2)
    with pytest.raises(TypeError, match="layer"):
        attention_parameters(model, layer=1.0)
    with pytest.raises(TypeError, match="TinyTransformer"):
        attention_parameters("model")
