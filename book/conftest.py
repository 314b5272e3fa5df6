"""pytest configuration for the nbval run over book/ (`make test` runs `pytest --nbval ... book`).

Kernels started by nbval inherit this process's environment; fixing hashing, threads and
the matplotlib backend here keeps stored outputs reproducible however pytest is started.
"""

import os

os.environ.setdefault("PYTHONHASHSEED", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")

# Only notebooks are collected under book/; this file is configuration, not a test.
collect_ignore_glob = ["*.py"]
