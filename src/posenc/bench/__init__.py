"""The harness of ``make bench`` (``benchmarks/rope.py``) and the performance appendix.

:mod:`posenc.bench.forms`, the RoPE forms it times; :mod:`posenc.bench.clock`, how it
times them. Both import torch. The core and the book's tools never import this package.
"""
