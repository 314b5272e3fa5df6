"""Context extension, measured: train tiny RoPE models at length L, then stretch them. Imports torch.

The experiment behind the book's page on context extension (chapter 6), in one namespace:
this module re-exports the public names of the modules that hold them, and runs the
command line (``python -m posenc.experiments.context_extension`` is
``python -m posenc.experiments``).

For each seed (default :data:`DEFAULT_SEEDS`; the seed decides initial weights, batches and
validation sets):

1. **Train** (:mod:`~posenc.experiments.training`) the tiny model on the passkey task at
   ``L = train_length`` with plain RoPE until validation accuracy reaches the target.
2. **Extend without training** (:mod:`~posenc.experiments.evaluation`): evaluate the same
   weights at 1x, 2x, 4x and 8x L with each method of :func:`posenc.rope_scaling`.
3. **Fine-tune** copies at 4x L with ``"none"``, ``"linear"`` and ``"yarn"`` (s = 4), on
   identical batches; evaluate them at every length with s = 4 and with s = length / L.
4. **Entropy** of the attention rows that must find the needle, from the same passes.

Settings: :mod:`~posenc.experiments.config`; reading stored results (no torch):
:mod:`~posenc.experiments.analysis`; the re-check on another processor:
:mod:`~posenc.experiments.recheck`; two runs compared:
:mod:`~posenc.experiments.reproducibility`; the command line: :mod:`~posenc.experiments.cli`.
"""

import sys

from posenc.experiments.analysis import (
    ALLOWED_EXCEPTIONS,
    accuracy_by_distance,
    across_seeds,
    answer_distances,
    baseline_accuracy,
    beats,
    configs_of,
    find_setting,
    read_all_results,
    read_results,
    read_train_log,
    seeds_in,
    setting_correct,
    setting_distances,
    settings_of,
    spread_table,
    summarize_setting,
    summary_table,
    trained_distances,
    write_results,
    write_summary,
)
from posenc.experiments.cli import EVAL_TIME_NOTE, TRAIN_TIME_NOTE, build_parser, main
from posenc.experiments.config import (
    DEFAULT_DIR,
    DEFAULT_SEEDS,
    EVALUATED_METHODS,
    FINETUNE_METHODS,
    MULTIPLES,
    RESULTS_FILE,
    SETTINGS_KEY,
    SUMMARY_FILE,
    TRAIN_LOG_FILE,
    EvalConfig,
    ModelConfig,
    Phase,
    TrainConfig,
    applied_factor,
    eval_batch,
    evaluation_plan,
    seed_dir,
    setting_key,
)
from posenc.experiments.evaluation import (
    answer_entropy,
    evaluate_all,
    evaluate_setting,
    run_setting,
)
from posenc.experiments.recheck import (
    ENTROPY_RTOL,
    LOSS_RTOL,
    MEASURED_DRIFT,
    RECHECK_SETTINGS,
    TIE_MARGIN,
    recheck,
    relative_change,
)
from posenc.experiments.reproducibility import compare_runs
from posenc.experiments.training import (
    accuracy_and_loss,
    answer_logits,
    answer_loss,
    checkpoint_path,
    finetune,
    load_checkpoint,
    parameter_digest,
    rope_spec,
    save_checkpoint,
    train_all,
    train_base,
    train_phase,
    train_seeds,
)

__all__ = [
    "ALLOWED_EXCEPTIONS",
    "DEFAULT_DIR",
    "DEFAULT_SEEDS",
    "ENTROPY_RTOL",
    "EVALUATED_METHODS",
    "EVAL_TIME_NOTE",
    "EvalConfig",
    "FINETUNE_METHODS",
    "LOSS_RTOL",
    "MEASURED_DRIFT",
    "MULTIPLES",
    "ModelConfig",
    "Phase",
    "RECHECK_SETTINGS",
    "RESULTS_FILE",
    "SETTINGS_KEY",
    "SUMMARY_FILE",
    "TIE_MARGIN",
    "TRAIN_LOG_FILE",
    "TRAIN_TIME_NOTE",
    "TrainConfig",
    "accuracy_and_loss",
    "accuracy_by_distance",
    "across_seeds",
    "answer_distances",
    "answer_entropy",
    "answer_logits",
    "answer_loss",
    "applied_factor",
    "baseline_accuracy",
    "beats",
    "build_parser",
    "checkpoint_path",
    "compare_runs",
    "configs_of",
    "eval_batch",
    "evaluate_all",
    "evaluate_setting",
    "evaluation_plan",
    "find_setting",
    "finetune",
    "load_checkpoint",
    "main",
    "parameter_digest",
    "read_all_results",
    "read_results",
    "read_train_log",
    "recheck",
    "relative_change",
    "rope_spec",
    "run_setting",
    "save_checkpoint",
    "seed_dir",
    "setting_key",
    "seeds_in",
    "setting_correct",
    "setting_distances",
    "settings_of",
    "spread_table",
    "summarize_setting",
    "summary_table",
    "train_all",
    "train_base",
    "train_phase",
    "train_seeds",
    "trained_distances",
    "write_results",
    "write_summary",
]

if __name__ == "__main__":
    sys.exit(main())
