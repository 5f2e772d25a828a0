"""Benchmark: ``python -m posenc.bench`` prints speed ratios measured side by side in one run.

Each row times two ways of doing the same work back to back, ``--repeat`` times, in the
same process, and reports the median of the per-pair ratios, with the best time of each
side: a pair shares the machine's state (load, memory, caches), so the ratio is robust to
noise that would skew two separate measurements. The ratios mean more than the raw
times, which depend on the machine. Rows whose framework is not installed are skipped.

Rows:

- loops / vectorized: :func:`posenc.positional_encoding_loop` against
  :func:`posenc.positional_encoding` (speed-up of the vectorized version).
- textbook / posenc: the textbook NumPy form :func:`posenc.reference.textbook_encoding` (full
  angle matrix, ``np.sin`` for the even columns, ``np.cos`` for the odd ones) against
  :func:`posenc.positional_encoding`, float32 output (speed-up of the angle-addition method).
- PyTorch module / bare add: ``PositionalEncoding.forward`` against ``x + table[:seq_len]``
  with a ready table, float32 and bfloat16 (cost of the module; 1.0 is free).
- Keras layer / bare add: the layer's call against ``tf.add`` with a constant table.
- compiled block, module / bare add (with ``--compiled``): a small Transformer block
  (attention with ``scaled_dot_product_attention``, then a feed-forward layer) compiled by
  ``torch.compile(fullgraph=True, dynamic=True)`` with the ``--compile-backend`` (default
  inductor), fed ``PositionalEncoding(x)`` against the same block fed ``x + table[:seq_len]``;
  1.0 means the module costs nothing more than the add inside a compiled graph.
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

from .encoding import positional_encoding, positional_encoding_loop
from .reference import textbook_encoding


def ratio(a, b, repeat: int, number: int) -> tuple[float, float, float]:
    """Time the functions ``a`` and ``b`` back to back ``repeat`` times.

    Returns:
        (best seconds of ``a``, best seconds of ``b``, median of the pairs' ratios a / b).
    """
    def seconds(function):  # one timed run: the mean of `number` calls
        return timeit.timeit(function, number=number) / number

    a(), b()  # warm up: caches, lazy initialisation, first-call compilation
    pairs = [(seconds(a), seconds(b)) for _ in range(repeat)]
    a_times, b_times = zip(*pairs)
    return min(a_times), min(b_times), float(np.median([ta / tb for ta, tb in pairs]))


def numpy_rows(args) -> list[tuple[str, str, tuple[float, float, float]]]:
    n_loop = args.loop_size
    loops = (lambda: positional_encoding_loop(n_loop, n_loop),
             lambda: positional_encoding(n_loop, n_loop))
    shape = (args.seq_len, args.d_model)
    textbook = (lambda: textbook_encoding(*shape, dtype=np.float32),
                lambda: positional_encoding(*shape, dtype=np.float32))
    return [
        ("loops / vectorized", f"({n_loop}, {n_loop}) float64",
         ratio(*loops, repeat=args.repeat, number=1)),
        ("textbook / posenc", f"{shape} float32",
         ratio(*textbook, repeat=args.repeat, number=args.number)),
    ]


def pytorch_rows(args):
    try:
        import torch
    except ImportError:
        return []
    from .pytorch import PositionalEncoding

    torch.manual_seed(0)
    module = PositionalEncoding(d_model=args.d_model, max_len=args.seq_len).eval()
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(args.batch, args.seq_len, args.d_model).to(dtype)
        table = module.table(dtype)
        seq_len = x.shape[-2]
        rows.append((
            "PyTorch module / bare add", f"{tuple(x.shape)} {str(dtype).removeprefix('torch.')}",
            ratio(lambda: module(x), lambda: x + table[:seq_len],
                  repeat=args.repeat, number=args.number),
        ))
    return rows


class _Block:
    """A tiny pre-norm Transformer block, built lazily (torch is imported only when used)."""

    @staticmethod
    def make(d_model: int, heads: int, encode):
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.encode, self.heads = encode, heads
                self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
                self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                        nn.Linear(4 * d_model, d_model))

            def forward(self, x):
                x = self.encode(x)
                b, n, d = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
                a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.out(a.transpose(1, 2).reshape(b, n, d))
                return x + self.ff(x)

        torch.manual_seed(0)
        return Block().eval()


def compiled_rows(args):
    try:
        import torch
    except ImportError:
        return []
    from .pytorch import PositionalEncoding

    module = PositionalEncoding(d_model=args.d_model, max_len=args.seq_len).eval()
    table = module.table()

    def bare(x):
        return x + table[: x.shape[-2]]

    blocks = [torch.compile(_Block.make(args.d_model, 8, encode), fullgraph=True, dynamic=True,
                            backend=args.compile_backend) for encode in (module, bare)]
    x = torch.randn(args.batch, args.seq_len, args.d_model)
    with torch.no_grad():
        timing = ratio(lambda: blocks[0](x), lambda: blocks[1](x), repeat=args.repeat,
                       number=args.number)
    return [("compiled block, module / add", f"{tuple(x.shape)} float32", timing)]


def keras_rows(args):
    try:
        from .tensorflow import PositionalEncoding
    except ImportError:
        return []
    import tensorflow as tf

    layer = PositionalEncoding(max_len=args.seq_len)
    x = tf.random.stateless_normal((args.batch, args.seq_len, args.d_model), seed=(0, 0))
    layer(x)  # build
    table = tf.constant(positional_encoding(args.seq_len, args.d_model, dtype=np.float32))
    return [(
        "Keras layer / bare tf.add", f"{tuple(x.shape)} float32",
        ratio(lambda: layer(x), lambda: tf.add(x, table), repeat=args.repeat, number=args.number),
    )]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m posenc.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--seq-len", type=int, default=4096,
                        help="positions of the NumPy table (default 4096); 512 for the layers")
    parser.add_argument("--d-model", type=int, default=1024, help="width of the NumPy table (default 1024)")
    parser.add_argument("--batch", type=int, default=32, help="batch size for the layers (default 32)")
    parser.add_argument("--layer-seq-len", type=int, default=512, help="seq_len for the layers (default 512)")
    parser.add_argument("--layer-d-model", type=int, default=512, help="d_model for the layers (default 512)")
    parser.add_argument("--loop-size", type=int, default=256,
                        help="seq_len = d_model for the loop comparison (default 256)")
    parser.add_argument("--repeat", type=int, default=15, help="timed pairs per row (default 15)")
    parser.add_argument("--number", type=int, default=5, help="calls per timed run (default 5)")
    parser.add_argument("--frameworks", choices=["all", "none"], default="all",
                        help="'none' times the NumPy rows only")
    parser.add_argument("--compiled", action="store_true",
                        help="also time a compiled Transformer block with the module against a bare add")
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile back end of --compiled (default inductor)")
    return parser.parse_args(argv)


def main(argv=None) -> list[tuple[str, str, tuple[float, float, float]]]:
    """Run the benchmark, print the table, and return its rows."""
    args = parse_args(argv)
    rows = numpy_rows(args)
    if args.frameworks == "all":
        layer_args = argparse.Namespace(**{**vars(args), "seq_len": args.layer_seq_len,
                                           "d_model": args.layer_d_model})
        rows += pytorch_rows(layer_args) + keras_rows(layer_args)
        if args.compiled:
            rows += compiled_rows(layer_args)
    print(f"{'comparison A / B':<28} {'shape':<26} {'A (ms)':>10} {'B (ms)':>10} {'A / B':>7}")
    print(f"{'':<28} {'':<26} {'best':>10} {'best':>10} {'median':>7}")
    for name, shape, (a, b, r) in rows:
        print(f"{name:<28} {shape:<26} {a * 1e3:>10.3f} {b * 1e3:>10.3f} {r:>7.2f}")
    return rows


if __name__ == "__main__":
    main()
