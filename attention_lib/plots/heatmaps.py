"""Attention weights as a heatmap, and the in-place update that moves them.

Masked cells are one hatched grey patch, never a colormap colour; the numbers
in the cells are optional texts. The builder returns what it drew (a
:class:`Heatmap`), and the update moves exactly those artists.
"""

from __future__ import annotations

from typing import NamedTuple

import matplotlib as mpl
import numpy as np
from matplotlib.patches import PathPatch
from matplotlib.path import Path

from .style import DIVERGING_CMAP, MASKED_COLOR, _labels, _prepare, _style_labels, format_weight

__all__ = ["Heatmap", "attention_heatmap", "update_attention_heatmap"]


class Heatmap(NamedTuple):
    """What :func:`attention_heatmap` drew and :func:`update_attention_heatmap` moves."""

    image: mpl.image.AxesImage
    masked: PathPatch  #: every blocked cell, one hatched patch
    texts: list  #: one number per cell, row by row (empty without ``annotate``)


def _text_color(rgba):
    """Black or white, whichever reads better on a cell of colour ``rgba``."""
    r, g, b = rgba[:3]
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if luminance > 0.45 else "white"


def attention_heatmap(
    weights,
    ax=None,
    *,
    mask=None,
    query_labels=None,
    key_labels=None,
    annotate=None,
    decimals=2,
    title=None,
    cmap=None,
    vmin=0.0,
    vmax=1.0,
    colorbar=True,
    colorbar_label=None,
    signed=False,
    style=None,
):
    """Attention weights as a heatmap: one row per query, one column per key.

    Masked (blocked) cells are drawn grey and hatched, never with a colormap
    colour, so they stay distinct from readable keys that got weight 0.

    Parameters
    ----------
    weights : array_like, shape (T_q, T_k)
        The weights to show (or any matrix, with ``vmin``/``vmax`` to match).
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new pyplot figure if omitted.
    mask : array_like of bool, optional
        True = the query may read the key; broadcastable to ``weights``.
    query_labels, key_labels : sequence of str, optional
        Token labels for rows and columns (default: positions 0, 1, ...).
    annotate : bool, optional
        Write each value in its cell, rounded to ``decimals``. Default: only
        when the matrix is small enough to read (at most 10 x 10).
    decimals : int, default 2
    title : str, optional
    cmap : str, optional
        Default "viridis" (sequential), or ``DIVERGING_CMAP`` when ``signed``.
    vmin, vmax : float, default 0 and 1
        Colour range; weights live in [0, 1]. Pass None for the data range.
        Ignored when ``signed``.
    colorbar : bool, default True
    colorbar_label : str, optional
        What the colours measure, e.g. "∂L/∂S". Default "weight" for the
        default range, otherwise "value".
    signed : bool, default False
        For signed quantities such as gradients: a diverging colour map centred
        at 0 (white), with limits ``±max|value|``, so positive and negative
        entries get opposite hues and a zero is white, never the grey hatch of
        a masked cell.
    style : {"default", "board"}, optional
        Default: the figure's style (see :func:`figure_style`).

    Returns
    -------
    Heatmap

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> weights = np.array([[1.0, 0.0], [0.25, 0.75]])
    >>> heatmap = attention_heatmap(weights, ax=ax, mask=causal_mask(2), key_labels=["a", "b"])
    >>> [t.get_text() for t in ax.texts if t.get_visible()]  # the masked cell has none
    ['1.00', '0.25', '0.75']
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['a', 'b']
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(
            f"weights must be 2-D (T_q, T_k) for a heatmap; got shape {weights.shape}. "
            "Pick one example and head first, e.g. weights[0, 0]."
        )
    n_q, n_k = weights.shape
    blocked = _blocked_cells(mask, weights.shape)
    query_labels = _labels(query_labels, n_q, "query_labels")
    key_labels = _labels(key_labels, n_k, "key_labels")
    ax, spec = _prepare(ax, style)

    shown = np.ma.masked_array(weights, mask=blocked | ~np.isfinite(weights))
    if signed:
        largest = float(np.abs(shown).max()) if shown.count() else 0.0
        vmax = largest if largest > 0 else 1.0
        vmin = -vmax
    if cmap is None:
        cmap = DIVERGING_CMAP if signed else "viridis"
    colormap = mpl.colormaps[cmap].with_extremes(bad=MASKED_COLOR)
    image = ax.imshow(
        shown,
        cmap=colormap,
        vmin=vmin,
        vmax=vmax,
        aspect="auto",
        interpolation="nearest",
    )
    # All masked cells form ONE hatched patch, so an explorer can move the mask
    # in place (update_attention_heatmap) and drawing stays cheap for large T.
    hatched = {"facecolor": MASKED_COLOR, "edgecolor": "#6e6e6e", "hatch": "//", "linewidth": 0}
    masked = ax.add_patch(PathPatch(_cells_path(blocked), label="_masked", **hatched))
    if annotate is None:
        annotate = max(n_q, n_k) <= 10
    # One text per cell (hidden where masked), so updates only change them.
    texts = [
        ax.text(j, i, "", ha="center", va="center", fontsize=spec["annotation"])
        for i in range(n_q if annotate else 0)
        for j in range(n_k)
    ]
    heatmap = Heatmap(image, masked, texts)
    _annotate_cells(heatmap, weights, blocked, decimals)
    ax.set_xticks(range(n_k), key_labels if key_labels is not None else range(n_k))
    ax.set_yticks(range(n_q), query_labels if query_labels is not None else range(n_q))
    ax.set(xlabel="key", ylabel="query")
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, shrink=0.85)
        bar.ax.tick_params(labelsize=spec["tick"])
        if colorbar_label is None:
            colorbar_label = "weight" if (vmin, vmax) == (0.0, 1.0) else "value"
        bar.set_label(colorbar_label, fontsize=spec["label"])
    _style_labels(ax, spec, title)
    return heatmap


def update_attention_heatmap(heatmap, weights, mask=None, *, decimals=2):
    """Show new ``weights`` (and a new ``mask``) in a :class:`Heatmap`, same shape as before.

    The colour scale, labels and title stay as :func:`attention_heatmap` drew them.

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> heatmap = attention_heatmap(np.full((2, 2), 0.5), ax=ax, colorbar=False)
    >>> update_attention_heatmap(heatmap, np.array([[1.0, 0.0], [0.3, 0.7]]),
    ...                          mask=causal_mask(2))
    >>> [t.get_text() for t in heatmap.texts if t.get_visible()]
    ['1.00', '0.30', '0.70']
    """
    weights = np.asarray(weights, dtype=float)
    shown = heatmap.image.get_array().shape
    if weights.shape != shown:
        raise ValueError(
            f"the heatmap shows shape {shown}; got weights of shape "
            f"{weights.shape}. Draw a new heatmap for a new shape."
        )
    blocked = _blocked_cells(mask, weights.shape)
    heatmap.image.set_data(np.ma.masked_array(weights, mask=blocked | ~np.isfinite(weights)))
    heatmap.masked.set_path(_cells_path(blocked))
    _annotate_cells(heatmap, weights, blocked, decimals)


def _cells_path(blocked):
    """One compound path of unit squares around the True cells of ``blocked``."""
    rows, cols = np.nonzero(blocked)
    if rows.size == 0:
        return Path(np.zeros((1, 2)), [Path.MOVETO])
    corners = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5], [-0.5, -0.5]])
    vertices = (np.stack([cols, rows], axis=-1)[:, None, :] + corners[None]).reshape(-1, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], rows.size)
    return Path(vertices, codes)


def _annotate_cells(heatmap, weights, blocked, decimals):
    if not heatmap.texts:  # drawn without numbers (annotate=False)
        return
    colormap, norm = heatmap.image.get_cmap(), heatmap.image.norm
    for text, value, hidden in zip(heatmap.texts, weights.ravel(), blocked.ravel(), strict=True):
        visible = not hidden and bool(np.isfinite(value))
        text.set_visible(visible)
        if visible:
            text.set_text(format_weight(value, decimals))
            text.set_color(_text_color(colormap(norm(value))))


def _blocked_cells(mask, shape):
    """Boolean array of the cells a mask blocks (``~mask``), or all False without a mask."""
    if mask is None:
        return np.zeros(shape, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be boolean (True = may read); got dtype {mask.dtype}.")
    try:
        return ~np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to weights of shape {shape}."
        ) from None
