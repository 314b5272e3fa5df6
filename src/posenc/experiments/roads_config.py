""" "Other roads": the settings of every encoding on both tasks, the plan and its cost. numpy only.

Chapter 6's model with each position signal of :data:`ROADS`
(:func:`road_encoding`), trained at L = 128 on both tasks with the task's own chapter's
settings: chapter 6's :class:`~posenc.experiments.config.TrainConfig` on the passkey
task (stop at 98 % validation accuracy, then a 100-step fine-tune at 4L) with one cut,
at most 4000 base steps instead of 6000 (:data:`PASSKEY_MAX_STEPS`: the budget of 120
minutes for every run of this section, priced at every run hitting its cap); "Real
text"'s :class:`~posenc.experiments.text_config.TextConfig` on the King James Bible
(1000 steps, then 200-step fine-tunes at 4L), unchanged. Three seeds each.

RoPE on text is not trained again: its runs are "Real text"'s stored seeds 0-2
(:data:`REUSED_ROPE`), the same configuration, seeds and thread count. On the passkey
task it is trained again, under the same cap as the others (chapter 6's seed 1 needed
4450 steps). The encodings of
the RoPE family (:data:`ROPE_FAMILY`) are also shown with an extension method:
training-free at s = n / L at every longer length n, and fine-tuned at 4L (s = 4,
evaluated with that s at every length, as "Real text" does). YaRN on both tasks; PI on
text too. For p-RoPE, PI is exactly transformers' ``"proportional"`` with factor s, and
YaRN leaves the unrotated pairs at frequency 0.

Everything is evaluated at 1L .. 16L: passkey accuracy by distance
(:func:`~posenc.experiments.config.eval_batch`'s sequences, every encoding the same), and
both perplexity protocols of "Real text" (whole-window and fixed-target).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from posenc._validation import check_choice
from posenc.experiments.config import BASE_PHASE, EvalConfig, ModelConfig, TrainConfig
from posenc.experiments.encodings import PositionEncoding
from posenc.experiments.text_config import TEXT_DIR, TextConfig, TextEvalConfig

#: Every encoding, in the book's order.
ROADS = ("nope", "learned", "sinusoidal", "rope", "p_rope", "alibi", "t5", "hybrid")
#: The encodings with RoPE's extension methods.
ROPE_FAMILY = ("rope", "p_rope", "hybrid")
#: p-RoPE's share of rotated pairs: Gemma 4's ``partial_rotary_factor``.
P_ROPE_SHARE = 0.25
TASKS = ("passkey", "text")
ROADS_SEEDS = (0, 1, 2)
#: Seeds the page never reads: the checks appendix re-tests every claim with them. Their
#: runs train and score the base model only (no fine-tunes), since every claim is about
#: base models, with RoPE's extension methods applied training-free.
HOLDOUT_SEEDS = (3,)
ROADS_MULTIPLES = (1, 2, 4, 8, 16)
#: Where the runs are kept, relative to the current directory (the repository's root).
ROADS_DIR = Path("book") / "data" / "other_roads"
#: Seeds whose checkpoints are committed (the page's portable re-check reads them);
#: the others' stay local (.gitignore), their results are committed.
CHECKPOINT_SEEDS = (0,)
#: RoPE's runs on text: "Real text"'s own, stored (same configuration, same seeds).
REUSED_ROPE = {"text": TEXT_DIR}
#: The passkey base phase's step cap (chapter 6: 6000), cut to fit the budget.
PASSKEY_MAX_STEPS = 4000
#: Each task's extension methods for the RoPE family (fine-tuned at 4L and training-free).
EXTENSIONS = {"passkey": ("yarn",), "text": ("linear", "yarn")}

PASSKEY_CONFIG = TrainConfig(base=replace(BASE_PHASE, steps=PASSKEY_MAX_STEPS))
TEXT_CONFIG = TextConfig()
#: 8 chunks of 32 sequences (4 answers each) per length: 1024 answers a setting.
PASSKEY_EVAL = EvalConfig(num_chunks=8, multiples=ROADS_MULTIPLES)
TEXT_EVAL = TextEvalConfig(multiples=ROADS_MULTIPLES)
TRAIN_LOG = "train_log.json"
RESULTS = "results.json"


def check_road(name: object) -> str:
    return check_choice(name, "encoding", ROADS)


def check_task(name: object) -> str:
    return check_choice(name, "task", TASKS)


def road_encoding(name: str, model: ModelConfig, train_length: int) -> PositionEncoding:
    """The :class:`PositionEncoding` of ``name`` for ``model`` trained at ``train_length``.

    ``"p_rope"``: RoPE with :data:`P_ROPE_SHARE`; ``"hybrid"``: RoPE in every layer but
    the last, which has none (Llama 4 and SmolLM3 drop RoPE in every fourth layer; with
    chapter 6's two layers, RoPE in one and none in the other); ``"learned"``: a table
    of ``train_length`` positions.
    """
    name = check_road(name)
    if name == "p_rope":
        return PositionEncoding(partial_rotary_factor=P_ROPE_SHARE)
    if name == "hybrid":
        if model.num_layers < 2:
            raise ValueError(
                f"the hybrid needs at least 2 layers, got {model.num_layers}"
            )
        return PositionEncoding(rope_layers=tuple(range(model.num_layers - 1)))
    if name == "learned":
        return PositionEncoding("learned", max_positions=train_length)
    return PositionEncoding(name)


def run_dir(root: Path, task: str, name: str, seed: int) -> Path:
    """``root/<task>/<encoding>/seed_<seed>``: one run's checkpoints, log and results."""
    return Path(root) / check_task(task) / check_road(name) / f"seed_{seed}"


def checkpoint_dir(root: Path, task: str, name: str, seed: int) -> Path:
    """Where a run's checkpoints are: RoPE's on text in "Real text"'s folder, the
    others in :func:`run_dir`."""
    if check_road(name) == "rope" and check_task(task) in REUSED_ROPE:
        return REUSED_ROPE[task] / f"seed_{seed}"
    return run_dir(root, task, name, seed)


def finetuned_methods(task: str, name: str, seed: int | None = None) -> tuple[str, ...]:
    """The methods ``name`` is fine-tuned with at 4L on ``task``: none outside the
    family, and none for a :data:`HOLDOUT_SEEDS` seed."""
    if seed in HOLDOUT_SEEDS and not is_reused(task, name):
        return ()
    return EXTENSIONS[check_task(task)] if check_road(name) in ROPE_FAMILY else ()


def road_plan(
    task: str,
    name: str,
    multiples: tuple[int, ...] = ROADS_MULTIPLES,
    tuned: int = 4,
    seed: int | None = None,
) -> list[dict]:
    """Every (model, method, factor, multiple) setting of one encoding and seed, in order.

    The base model as trained (method ``"none"``) at every multiple; for the RoPE
    family, also each extension method training-free at s = multiple (multiples > 1),
    and each fine-tuned model with its method at the s it was tuned with (``tuned``,
    the configurations' ``finetune_multiple``) at every multiple; ``seed`` drops the
    fine-tuned models a :data:`HOLDOUT_SEEDS` seed does not train.
    """
    task, name = check_task(task), check_road(name)
    plan = [
        {"model": "base", "method": "none", "factor": 1.0, "multiple": m}
        for m in multiples
    ]
    if name not in ROPE_FAMILY:
        return plan
    for method in EXTENSIONS[task]:
        plan += [
            {"model": "base", "method": method, "factor": float(m), "multiple": m}
            for m in multiples
            if m > 1
        ]
    for method in finetuned_methods(task, name, seed):
        plan += [
            {
                "model": f"finetune_{method}",
                "method": method,
                "factor": float(tuned),
                "multiple": m,
            }
            for m in multiples
        ]
    return plan


# ------------------------------------------------------------------ the cost

#: CPU seconds per optimizer step, 1 thread, measured by pilots of 30 (passkey) and 20
#: (text) steps on this project's 2-core machine while other jobs shared it: the
#: median of the steps after the third, in CPU time (process_time), so the other jobs'
#: share of the cores does not count. "base": a batch at L (64 sequences of the task,
#: 32 windows of text); "finetune": a fine-tuning batch at 4L (32 sequences, 8 windows).
SECONDS_PER_STEP: dict[tuple[str, str], dict[str, float]] = {
    ("passkey", "nope"): {"base": 0.0655},
    ("passkey", "learned"): {"base": 0.0630},
    ("passkey", "sinusoidal"): {"base": 0.0598},
    ("passkey", "rope"): {"base": 0.0839, "finetune": 0.2281},
    ("passkey", "p_rope"): {"base": 0.0812, "finetune": 0.2307},
    ("passkey", "alibi"): {"base": 0.0850},
    ("passkey", "t5"): {"base": 0.1036},
    ("passkey", "hybrid"): {"base": 0.0780, "finetune": 0.2127},
    ("text", "nope"): {"base": 0.1380},
    ("text", "learned"): {"base": 0.1416},
    ("text", "sinusoidal"): {"base": 0.1434},
    ("text", "rope"): {"base": 0.1641, "finetune": 0.2167},
    ("text", "p_rope"): {"base": 0.1651, "finetune": 0.2140},
    ("text", "alibi"): {"base": 0.1634},
    ("text", "t5"): {"base": 0.1621},
    ("text", "hybrid"): {"base": 0.1691, "finetune": 0.2167},
}
#: CPU seconds to score one setting at 16L, the largest over the encodings, measured
#: as above (one passkey chunk of 32 sequences scaled to the plan's 8; two windows of
#: each text protocol scaled to the plan's counts): ALiBi and T5 (a bias on the
#: logits) 8.8 and 8.6 s on the passkey task, 11.8 and 14.2 s on text; RoPE, NoPE and
#: the hybrid 4.0-5.4 s. Shorter lengths cost less (at 4L 0.6-1.9 s).
EVAL_SECONDS_16L: dict[str, float] = {"passkey": 8.8, "text": 14.2}


def is_reused(task: str, name: str) -> bool:
    """Whether ``name``'s runs on ``task`` are a chapter's stored ones (not trained here)."""
    return check_road(name) == "rope" and check_task(task) in REUSED_ROPE


def jobs_of(
    tasks: tuple[str, ...] = TASKS,
    names: tuple[str, ...] = ROADS,
    seeds: tuple[int, ...] = ROADS_SEEDS,
) -> list[tuple[str, str, int]]:
    """Every (task, encoding, seed) job, in the plan's order (RoPE's on text: scoring
    only)."""
    return [
        (check_task(task), check_road(name), seed)
        for task in tasks
        for name in names
        for seed in seeds
    ]


def training_seconds(task: str, name: str) -> float:
    """The most CPU seconds one seed's training can take: every base step up to the cap
    (an encoding that never reaches the passkey target runs them all) and the fine-tunes,
    at :data:`SECONDS_PER_STEP`, validation checks not counted. 0 for what is reused."""
    if is_reused(task, name):
        return 0.0
    config = PASSKEY_CONFIG if check_task(task) == "passkey" else TEXT_CONFIG
    cost = SECONDS_PER_STEP[task, name]
    seconds = config.base.steps * cost["base"]
    for _ in finetuned_methods(task, name):
        seconds += config.finetune.steps * cost["finetune"]
    return seconds


def evaluation_seconds(task: str, name: str) -> float:
    """A bound on one seed's scoring: every setting of :func:`road_plan` at half of
    :data:`EVAL_SECONDS_16L` (the plan's lengths 1L .. 16L average 6.2L, and a
    setting's cost grows at least linearly with its length)."""
    return len(road_plan(task, name)) * EVAL_SECONDS_16L[check_task(task)] / 2


def projected_seconds(task: str, name: str) -> float:
    """One job's projected CPU seconds: training and scoring."""
    return training_seconds(task, name) + evaluation_seconds(task, name)


def worker_jobs(
    worker: int, workers: int, jobs: list[tuple[str, str, int]]
) -> list[tuple[str, str, int]]:
    """The share of ``jobs`` that worker ``worker`` of ``workers`` runs: longest first,
    each to the worker with the least projected time so far (every worker computes the
    same split, so n processes started with the same jobs share them out)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if isinstance(worker, bool) or not isinstance(worker, int):
        raise ValueError(f"worker must be an integer, got {worker!r}")
    if not 0 <= worker < workers:
        raise ValueError(f"worker must be in 0 .. {workers - 1}, got {worker}")
    loads = [0.0] * workers
    shares: list[list] = [[] for _ in range(workers)]
    order = sorted(range(len(jobs)), key=lambda i: -projected_seconds(*jobs[i][:2]))
    for index in order:
        least = loads.index(min(loads))
        loads[least] += projected_seconds(*jobs[index][:2])
        shares[least].append(jobs[index])
    return shares[worker]


def plan_note(workers: int = 2) -> str:
    """The plan's cost in a sentence, for ``--help``: the measured steps and the bound."""
    jobs = jobs_of()
    train = sum(training_seconds(t, n) for t, n, _ in jobs) / 60
    score = sum(evaluation_seconds(t, n) for t, n, _ in jobs) / 60
    per_worker = max(
        sum(projected_seconds(t, n) for t, n, _ in worker_jobs(w, workers, jobs))
        for w in range(workers)
    )
    longest = max(projected_seconds(t, n) for t, n, _ in jobs) / 60
    return (
        f"Projected from measured seconds per step (1 thread): training at most "
        f"{train:.0f} CPU min (every passkey run to its {PASSKEY_MAX_STEPS}-step cap), "
        f"scoring about "
        f"{score:.0f} CPU min; {workers} workers, one per core: at most "
        f"{per_worker / 60:.0f} min each; the longest job {longest:.0f} min."
    )
