"""The course's figures, drawn with matplotlib so every chapter shares one style.

Importing this module imports matplotlib. Each function draws on the ``matplotlib``
``Axes`` it is given (or on a new figure) and returns that ``Axes``; nothing is shown or
saved here, so a notebook decides when to display.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

#: Diverging colour map centred on 0, suited to values in [-1, 1].
CMAP = "RdBu_r"


def _axes(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _matrix(pe) -> np.ndarray:
    pe = np.asarray(pe)
    if pe.ndim != 2:
        raise ValueError(f"expected a matrix of shape (seq_len, d_model), got shape {pe.shape}")
    return pe


def heatmap(pe, *, ax=None, title: str = "Sinusoidal positional encoding",
            colorbar_label: str = "PE[pos, j]", vmin: float = -1.0, vmax: float = 1.0):
    """Draw an encoding matrix as an image: positions down, dimensions across.

    Args:
        pe: array-like of shape ``(seq_len, d_model)`` (NumPy array, or a tensor that
            ``numpy.asarray`` accepts).
        ax: the ``matplotlib.axes.Axes`` to draw on; ``None`` makes a new figure.
        title: the title of the plot.
        colorbar_label: the label of the colour bar.
        vmin, vmax: the values mapped to the ends of the colour map.

    Returns:
        The ``Axes`` drawn on. A colour bar is attached to it.

    Raises:
        ValueError: ``pe`` is not two-dimensional.
    """
    pe = _matrix(pe)
    ax = _axes(ax, (8, 4.5))
    image = ax.imshow(pe, cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto",
                      interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel("dimension index j")
    ax.set_ylabel("position pos")
    ax.figure.colorbar(image, ax=ax, label=colorbar_label)
    return ax


def plot_positions(pe, positions, *, ax=None,
                   title: str = "Encoding vectors of a few positions"):
    """Plot rows of the encoding: the value of every dimension ``j`` for chosen positions.

    Args:
        pe: array-like of shape ``(seq_len, d_model)``.
        positions: iterable of row indices (``int``) into ``pe``.
        ax: the ``Axes`` to draw on; ``None`` makes a new figure.
        title: the title of the plot.

    Returns:
        The ``Axes`` drawn on, with one labelled line per position.

    Raises:
        ValueError: ``pe`` is not two-dimensional.
        IndexError: a position is not a row of ``pe``.
    """
    pe = _matrix(pe)
    ax = _axes(ax, (8, 3.5))
    for pos in positions:
        ax.plot(np.arange(pe.shape[1]), pe[pos], label=f"pos = {pos}")
    ax.set_title(title)
    ax.set_xlabel("dimension index j")
    ax.set_ylabel("PE[pos, j]")
    ax.set_ylim(-1.1, 1.1)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the axes, off the curves
    return ax


def plot_dimensions(pe, dims, *, ax=None, title: str = "A few dimensions across positions"):
    """Plot columns of the encoding: how dimension ``j`` varies with the position.

    Args:
        pe: array-like of shape ``(seq_len, d_model)``.
        dims: iterable of column indices ``j`` (``int``) into ``pe``.
        ax: the ``Axes`` to draw on; ``None`` makes a new figure.
        title: the title of the plot.

    Returns:
        The ``Axes`` drawn on, with one labelled line per dimension.

    Raises:
        ValueError: ``pe`` is not two-dimensional.
        IndexError: a dimension is not a column of ``pe``.
    """
    pe = _matrix(pe)
    ax = _axes(ax, (8, 3.5))
    for j in dims:
        kind = "sin" if j % 2 == 0 else "cos"
        ax.plot(np.arange(pe.shape[0]), pe[:, j], label=f"j = {j} ({kind}, i = {j // 2})")
    ax.set_title(title)
    ax.set_xlabel("position pos")
    ax.set_ylabel("PE[pos, j]")
    ax.set_ylim(-1.1, 1.1)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the axes, off the curves
    return ax


#: The steps of :func:`transformer_input_diagram`, left to right: (box text, role).
TRANSFORMER_INPUT_STEPS = (
    ("token ids\n(seq_len,)", "input"),
    ("embedding lookup\n(seq_len, d_model)", "step"),
    ("× √d_model", "step"),
    ("+", "sum"),
    ("dropout", "step"),
    ("encoder / decoder\nstacks", "output"),
)
#: The box below the sum: the positional encoding that is added.
POSITIONAL_ENCODING_BOX = "positional encoding\nPE, (seq_len, d_model)"


def transformer_input_diagram(*, ax=None,
                              title: str = "Where the positional encoding enters a Transformer"):
    """Draw the input path of a Transformer as boxes and arrows.

    Token ids are looked up in the embedding table, scaled by ``sqrt(d_model)``, the
    positional encoding is added, dropout is applied, and the result enters the encoder or
    decoder stack (Vaswani et al. 2017, sections 3.4 and 3.5). The steps are the texts of
    :data:`TRANSFORMER_INPUT_STEPS`, in that order, and :data:`POSITIONAL_ENCODING_BOX`.

    Args:
        ax: the ``matplotlib.axes.Axes`` to draw on; ``None`` makes a new figure.
        title: the title of the plot.

    Returns:
        The ``Axes`` drawn on, with its axis lines and ticks turned off. Each box is a
        ``Text`` artist of the axes, drawn in the order above; each arrow is a
        ``matplotlib.text.Annotation`` without text.
    """
    ax = _axes(ax, (10, 3.2))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title(title)
    styles = {"input": "#deebf7", "step": "#f0f0f0", "sum": "#fee0d2", "output": "#e5f5e0"}
    n = len(TRANSFORMER_INPUT_STEPS)
    xs = [(k + 0.5) / n for k in range(n)]
    y_main, y_pe = 0.72, 0.2
    boxes = []
    for x, (text, role) in zip(xs, TRANSFORMER_INPUT_STEPS):
        boxes.append(ax.text(x, y_main, text, ha="center", va="center",
                             fontsize=16 if role == "sum" else 9,
                             bbox={"boxstyle": "round,pad=0.5", "facecolor": styles[role],
                                   "edgecolor": "0.3"}))
    sum_box = boxes[[role for _, role in TRANSFORMER_INPUT_STEPS].index("sum")]
    pe_box = ax.text(sum_box.get_position()[0], y_pe, POSITIONAL_ENCODING_BOX, ha="center",
                     va="center", fontsize=9,
                     bbox={"boxstyle": "round,pad=0.5", "facecolor": styles["sum"],
                           "edgecolor": "0.3"})
    # Arrows run between the boxes' edges: (x, y) in the coordinates of each text artist.
    arrow = {"arrowstyle": "->", "color": "0.2", "shrinkA": 7, "shrinkB": 7}
    for start, end in zip(boxes, boxes[1:]):
        ax.annotate("", xy=(0, 0.5), xycoords=end, xytext=(1, 0.5), textcoords=start,
                    arrowprops=arrow)
    ax.annotate("", xy=(0.5, 0), xycoords=sum_box, xytext=(0.5, 1), textcoords=pe_box,
                arrowprops=arrow)
    return ax
