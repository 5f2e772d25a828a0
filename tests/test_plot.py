"""posenc.plot: the shared figures carry titles, labels, legends and colour bars."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import posenc  # noqa: E402
from posenc import plot  # noqa: E402

PE = posenc.positional_encoding(20, 8)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_heatmap_has_labels_and_colour_bar():
    ax = plot.heatmap(PE, title="T")
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("T", "dimension index j", "position pos")
    assert len(ax.figure.axes) == 2  # the image and its colour bar
    assert ax.images[0].get_array().shape == (20, 8)


def test_plot_positions_one_line_per_position():
    ax = plot.plot_positions(PE, [0, 3, 7])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["pos = 0", "pos = 3", "pos = 7"]
    assert ax.get_xlabel() == "dimension index j"


def test_plot_dimensions_one_line_per_dimension():
    ax = plot.plot_dimensions(PE, [0, 5])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "j = 0 (sin, i = 0)", "j = 5 (cos, i = 2)"]
    assert ax.get_xlabel() == "position pos"


def test_draws_on_given_axes():
    fig, axes = plt.subplots(1, 2)
    assert plot.heatmap(PE, ax=axes[0]) is axes[0]


@pytest.mark.parametrize("draw", [plot.heatmap, lambda pe: plot.plot_positions(pe, [0])])
def test_rejects_non_matrix(draw):
    with pytest.raises(ValueError, match=r"shape \(seq_len, d_model\), got shape \(8,\)"):
        draw(PE[0])


def test_transformer_input_diagram_boxes_in_order():
    ax = plot.transformer_input_diagram()
    texts = [t.get_text() for t in ax.texts if not isinstance(t, matplotlib.text.Annotation)]
    steps = [text for text, _ in plot.TRANSFORMER_INPUT_STEPS]
    assert texts == [*steps, plot.POSITIONAL_ENCODING_BOX]
    assert [steps.index(s) for s in ("token ids\n(seq_len,)", "× √d_model", "+", "dropout")] == [
        0, 2, 3, 4]
    # one arrow between consecutive steps, one from the encoding up into the sum
    arrows = [c for c in ax.get_children() if isinstance(c, matplotlib.text.Annotation)]
    assert len(arrows) == len(steps)
    boxes = [t for t in ax.texts if not isinstance(t, matplotlib.text.Annotation)]
    assert [(a.anncoords, a.xycoords) for a in arrows] == [
        *zip(boxes[:len(steps) - 1], boxes[1:len(steps)]), (boxes[-1], boxes[3])]
    assert ax.get_title() == "Where the positional encoding enters a Transformer"
    assert not ax.axison


def test_transformer_input_diagram_on_given_axes():
    fig, axes = plt.subplots(1, 2)
    assert plot.transformer_input_diagram(ax=axes[1], title="T") is axes[1]
    assert axes[1].get_title() == "T"
