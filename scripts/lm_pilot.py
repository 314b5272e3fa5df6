"""Issue 23's pilot: one byte-level language model on the corpus, timed and measured.

Trains chapter 6's model (vocabulary 256) at L bytes with plain RoPE on the train part,
then prints the training speed, test bits per byte at L against the add-one unigram's,
and the test loss by position at 4L without any scaling (the extrapolation the later
session compares the methods on). Numbers only; nothing is written. Example::

    nice -n 10 python scripts/lm_pilot.py --steps 1200 --d-model 96 --layers 3 --heads 3
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from posenc.experiments.config import ModelConfig, Phase
from posenc.experiments.corpus import (
    VOCAB_SIZE,
    bits_per_byte,
    byte_tokens,
    evaluation_windows,
    load_split,
    unigram_log2_probs,
)
from posenc.experiments.language_model import bits, loss_by_position
from posenc.experiments.tiny_model import RopeSpec
from posenc.experiments.training import train_language_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=128, help="L, bytes")
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--d-model", type=int, default=96)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--heads", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    parts = load_split()
    length = args.length
    config = ModelConfig(
        vocab_size=VOCAB_SIZE,
        d_model=args.d_model,
        num_heads=args.heads,
        num_layers=args.layers,
    )
    phase = Phase(
        steps=args.steps,
        batch_size=args.batch,
        learning_rate=args.learning_rate,
        warmup_steps=100,
        eval_every=max(1, args.steps // 6),
        val_sequences=64,
    )
    model, log = train_language_model(
        config, phase, parts=parts, length=length, seed=args.seed
    )
    steps_per_second = log["steps"] / log["seconds"]
    print(
        f"{log['parameters']} parameters, {log['steps']} steps in {log['seconds']:.0f} s"
        f" ({steps_per_second:.2f} steps/s, {log['cpu_seconds']:.0f} CPU s, "
        f"{log['steps'] * args.batch * length / 1e6:.2f} M training bytes)"
    )
    test = byte_tokens(parts["test"])
    unigram = bits_per_byte(unigram_log2_probs(byte_tokens(parts["train"])), test[1:])
    model.eval()
    rope = RopeSpec(original_max_position=length)
    for multiple in (1, 2, 4):
        start = time.perf_counter()
        by_position = loss_by_position(
            model, evaluation_windows(test, multiple * length), rope
        )
        mean = bits(float(by_position.mean()))
        print(
            f"test at {multiple}L = {multiple * length}: {mean:.4f} bits/byte "
            f"(perplexity {2**mean:.3f}; unigram {unigram:.4f}, perplexity "
            f"{2**unigram:.3f}) in {time.perf_counter() - start:.0f} s"
        )
        if multiple == 4:
            eighths = [0, 1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 28, 32]  # 0 .. 4L
            edges = [length * eighth // 8 for eighth in eighths]
            for low, high in zip(edges[:-1], edges[1:]):
                print(
                    f"  positions {low:3d}-{high - 1:3d}: "
                    f"{bits(float(np.mean(by_position[low:high]))):.4f} bits/byte"
                )
    print(f"(ln 2 = {math.log(2):.4f} nats per bit)")


if __name__ == "__main__":
    main()
