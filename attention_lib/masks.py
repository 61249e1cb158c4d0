"""Boolean attention masks: True means "this query may read this key".

Masks act on the scores before softmax (see :func:`attention_lib.masked_softmax`).
They broadcast against the weights of shape ``(..., T_q, T_k)``:

* a causal mask is ``(T_q, T_k)`` and serves every batch and head;
* a padding mask is ``(B, 1, T_k)`` for ``(B, T, d)`` inputs and
  ``(B, 1, 1, T_k)`` for ``(B, H, T, d)`` inputs;
* a packed causal mask (several documents in one row) is ``(T, T)``,
  block-diagonal with a causal triangle in each document's block.

The second case is a trap: NumPy lines shapes up from the right, so a
``(B, 1, T_k)`` mask against ``(B, H, T_q, T_k)`` weights pairs its ``B`` axis
with the *head* axis ``H``. When ``B == H`` nothing fails and head ``h`` of every
example is masked with example ``h``'s padding. Use ``padding_mask(valid, heads=True)``.

PyTorch's ``key_padding_mask`` (in ``nn.MultiheadAttention``) uses the opposite
convention, True = ignore; negate it with ``~`` before passing it here.
"""

from __future__ import annotations

import numpy as np

from ._validation import broadcast_mask, require_bool_mask, require_whole_number


def causal_mask(length, k_length=None):
    """Mask that lets query position ``i`` read key positions ``j <= i``.

    Parameters
    ----------
    length : int
        Number of query positions ``T_q`` (at least 1).
    k_length : int, optional
        Number of key positions ``T_k``; defaults to ``length`` (self-attention).
        A rectangular mask is aligned at the top-left corner, like PyTorch's
        ``is_causal=True`` and ``np.tril(np.ones((T_q, T_k)))``: query ``i``
        reads keys ``0..i`` whatever ``T_k`` is.

    Returns
    -------
    numpy.ndarray of bool, shape (length, k_length)

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    >>> causal_mask(2, 4).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0]])
    """
    q_length = require_whole_number(length, "length")
    k_length = q_length if k_length is None else require_whole_number(k_length, "k_length")
    return np.arange(q_length)[:, None] >= np.arange(k_length)[None, :]


def packed_causal_mask(lengths):
    """Causal mask for several documents packed one after another into one row.

    Training streams are often packed: documents of different lengths are
    concatenated so that no position is wasted on padding. A token may then
    read only itself and the earlier tokens *of its own document*, so the mask
    is causal inside each document and blocked between documents:
    block-diagonal, with a lower triangle (diagonal included) in each block.

    Parameters
    ----------
    lengths : array_like of int, shape (n_documents,)
        Length of each packed document, in order (each at least 1). The row
        length is ``sum(lengths)``.

    Returns
    -------
    numpy.ndarray of bool, shape (T, T) with ``T = sum(lengths)``

    Examples
    --------
    >>> packed_causal_mask([2, 3]).astype(int)
    array([[1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [0, 0, 1, 0, 0],
           [0, 0, 1, 1, 0],
           [0, 0, 1, 1, 1]])
    """
    document = document_ids(lengths)
    length = document.size
    return causal_mask(length) & (document[:, None] == document[None, :])


def document_ids(lengths):
    """Which document each position of a packed row belongs to: ``[0, 0, 1, 1, 1]`` for ``[2, 3]``.

    Parameters
    ----------
    lengths : array_like of int, shape (n_documents,)
        The length of each packed document, each at least 1.

    Returns
    -------
    numpy.ndarray of int, shape (sum(lengths),)
        The document number of each position, from 0.

    Examples
    --------
    >>> document_ids([2, 3])
    array([0, 0, 1, 1, 1])
    """
    lengths = np.asarray(lengths)
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1 or lengths.size == 0:
        raise TypeError(
            "lengths must be a non-empty 1-D array of whole numbers, one per packed "
            f"document; got dtype {lengths.dtype} and shape {lengths.shape}."
        )
    if lengths.min() < 1:
        raise ValueError(
            f"every packed document needs at least one token; got lengths {lengths.tolist()}."
        )
    return np.repeat(np.arange(lengths.size), lengths)


def padding_mask(valid, *, heads=False):
    """Turn per-example key validity into a mask that blocks padded keys.

    Parameters
    ----------
    valid : array_like of bool, shape (B, T)
        ``valid[b, t]`` is True when token ``t`` of example ``b`` is real
        (not padding). Build it from lengths with :func:`valid_from_lengths`.
    heads : bool, default False
        False gives ``(B, 1, T)``, for ``(B, T, d)`` inputs. True gives
        ``(B, 1, 1, T)``, for ``(B, H, T, d)`` inputs: without the extra axis,
        broadcasting would pair the batch axis with the head axis.

    Returns
    -------
    numpy.ndarray of bool, shape (B, 1, T) or (B, 1, 1, T)
        Every query of example ``b`` sees the same allowed keys.

    Examples
    --------
    >>> valid = np.array([[True, True, False], [True, False, False]])
    >>> padding_mask(valid).shape
    (2, 1, 3)
    >>> padding_mask(valid, heads=True).shape
    (2, 1, 1, 3)
    """
    valid = require_bool_mask(valid, "valid")
    if valid.ndim != 2:
        raise ValueError(
            f"valid must have shape (B, T), one row of booleans per example; got shape "
            f"{valid.shape}. To build it from lengths use valid_from_lengths(lengths, T)."
        )
    return valid[:, None, None, :] if heads else valid[:, None, :]


def valid_from_lengths(lengths, length):
    """Validity array ``(B, T)`` from each example's number of real tokens.

    Parameters
    ----------
    lengths : array_like of int, shape (B,)
        Real (unpadded) length of each example, between 0 and ``length``.
    length : int
        Padded sequence length ``T``.

    Returns
    -------
    numpy.ndarray of bool, shape (B, length)

    Examples
    --------
    >>> valid_from_lengths([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    length = require_whole_number(length, "length")
    lengths = np.asarray(lengths)
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1:
        raise TypeError(
            "lengths must be a 1-D array of whole numbers, one per example; got "
            f"dtype {lengths.dtype} and shape {lengths.shape}."
        )
    if lengths.size and (lengths.min() < 0 or lengths.max() > length):
        raise ValueError(f"lengths must lie between 0 and length={length}; got {lengths.tolist()}.")
    return np.arange(length)[None, :] < lengths[:, None]


def combine_masks(*masks):
    """Logical-and of boolean masks: a key is readable only if every mask allows it.

    ``None`` entries (no mask) are skipped; with no mask at all the result is
    ``None``. The masks must broadcast together.

    Parameters
    ----------
    *masks : array_like of bool or None
        True = may read; ``None`` stands for no mask.

    Returns
    -------
    numpy.ndarray of bool or None
        The broadcast logical-and of the masks given, or ``None`` when none was.

    Examples
    --------
    >>> causal = causal_mask(3)
    >>> padding = padding_mask(np.array([[True, True, False]]))
    >>> combine_masks(causal, padding).astype(int)
    array([[[1, 0, 0],
            [1, 1, 0],
            [1, 1, 0]]])
    >>> combine_masks(None, None) is None
    True
    """
    arrays = [require_bool_mask(m, f"masks[{i}]") for i, m in enumerate(masks) if m is not None]
    if not arrays:
        return None
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ValueError(f"masks of shapes {shapes} do not broadcast together.") from None
    combined = np.ones(shape, dtype=bool)
    for array in arrays:
        combined &= array
    return combined


def validate_mask(mask, weights_shape):
    """Check a mask against the weights it will act on; return it as a bool array.

    The mask must be boolean and broadcast to ``weights_shape`` *without
    enlarging it* (a mask that adds axes is almost always a batch/head mix-up).

    Parameters
    ----------
    mask : array_like of bool
        True = may read.
    weights_shape : tuple of int
        The shape ``(..., T_q, T_k)`` of the weights the mask acts on.

    Returns
    -------
    numpy.ndarray of bool
        ``mask`` itself, checked; it raises a ``TypeError`` or ``ValueError`` that
        says what is wrong otherwise.

    Examples
    --------
    >>> validate_mask(causal_mask(4), (2, 4, 4)).shape
    (4, 4)
    >>> validate_mask(causal_mask(3, 5), (2, 4, 4))
    Traceback (most recent call last):
        ...
    ValueError: mask of shape (3, 5) does not broadcast to weights of shape (2, 4, 4); ...
    """
    return broadcast_mask(mask, weights_shape)
