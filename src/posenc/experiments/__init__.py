"""The context-extension experiment of chapter 6 (modules imported by name).

numpy only: ``passkey`` (the seeded synthetic task), ``baselines`` (what a model scores
without matching the marker), ``config`` (the settings and the evaluation plan) and
``analysis`` (reading stored results). torch: ``tiny_model``, ``training``, ``evaluation``,
``recheck`` (stored results on another processor), ``reproducibility`` (two runs
compared), ``cli`` (``python -m posenc.experiments``) and ``context_extension``, which
re-exports them all. Importing this package imports none of them.
"""
