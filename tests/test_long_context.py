"""posenc.long_context: the passkey task, the rules, a training step, the evaluation, errors."""

import math

import pytest

torch = pytest.importorskip("torch")

from posenc import long_context as lc  # noqa: E402


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_the_passkey_is_the_token_after_the_marker_and_every_later_position_asks_for_it():
    tokens, targets, has_target, distance, marker = lc.passkey_batch(64, 20, generator=gen())
    assert tokens.shape == targets.shape == has_target.shape == distance.shape == (64, 20)
    for row in range(64):
        p = int(marker[row])
        assert 0 <= p <= 17 and tokens[row, p] == lc.MARKER
        assert (tokens[row] == lc.MARKER).sum() == 1                # one marker, never a passkey
        assert torch.all(targets[row] == tokens[row, p + 1])
        assert has_target[row].tolist() == [t > p + 1 for t in range(20)]
        assert distance[row].tolist() == [t - p - 1 for t in range(20)]
    again = lc.passkey_batch(64, 20, generator=gen())
    assert all(torch.equal(a, b) for a, b in zip(again, (tokens, targets, has_target, distance, marker)))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"batch_size": 0, "seq_len": 8}, ValueError, "batch_size"),
    ({"batch_size": 2, "seq_len": 2}, ValueError, "seq_len"),
    ({"batch_size": 2.0, "seq_len": 8}, TypeError, "batch_size"),
])
def test_bad_batches_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        lc.passkey_batch(**kwargs, generator=gen())
    with pytest.raises(TypeError, match="generator"):
        lc.passkey_batch(2, 8, generator=0)


def test_the_rules_are_valid_scalings_that_keep_the_trained_length():
    rules = lc.rules(32, 4)
    assert list(rules) == ["no scaling", "interpolation", "dynamic NTK", "YaRN", "Llama 3"]
    for name, scaling in rules.items():
        model = lc.build(scaling=scaling)
        assert model.causal and model.n_layers == 2 and model.rotary.head_dim == 16, name
        if scaling is not None:
            assert scaling["factor"] == 4.0
            assert scaling.get("original_max_position_embeddings", 32) == 32


def test_training_lowers_the_loss_and_evaluate_counts_every_target():
    model = lc.build(seed=1)
    losses = lc.train_passkey(model, steps=8, seq_len=12, seed=0, lr=1e-2)
    assert len(losses) == 8 and losses[-1] < losses[0]
    result = lc.evaluate(model, 12, n_sequences=16, seed=3)
    tokens, targets, has_target, distance, marker = lc.passkey_batch(16, 12, generator=gen(3))
    assert result["correct"].shape == result["loss"].shape == (int(has_target.sum()),)
    assert torch.equal(result["distance"], distance[has_target])
    assert torch.all(result["loss"] >= 0)
    by_distance = lc.accuracy_by_distance(result, [1, 4, 12, 40])
    assert len(by_distance) == 3 and math.isnan(by_distance[2]) and 0 <= by_distance[0] <= 1
    overall = lc.accuracy_by_distance(result, [0, 12])[0]
    assert overall == pytest.approx(result["correct"].double().mean().item())
