"""Experiments run on models trained in this repository (torch-only modules, imported by name).

``posenc.experiments.passkey`` (numpy only) generates the seeded synthetic task;
``posenc.experiments.tiny_model`` and ``posenc.experiments.context_extension`` import torch.
Importing this package imports neither.
"""
