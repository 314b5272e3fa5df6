"""How the tiny model is told where each token is: one spec per encoding. numpy only.

:class:`PositionEncoding` names the kind of position signal of
:class:`~posenc.experiments.tiny_model.TinyRopeTransformer` and its few settings:

* ``"rope"``: queries and keys rotated by RoPE (chapter 4) in the layers
  ``rope_layers`` (None: every layer; the others get no position signal at all, as
  Llama 4's and SmolLM3's NoPE layers). With ``partial_rotary_factor`` p it is p-RoPE
  (Barbero et al., ICLR 2025): only the first int(p * head_dim / 2) pairs, the fastest,
  rotate, as :func:`posenc.rope_scaling` ``"proportional"`` computes them; the others
  keep frequency 0 under every scaling method too. The default spec is chapter 6's
  model, unchanged.
* ``"nope"``: no position signal; only the causal mask tells positions apart.
* ``"learned"``: a learned vector per absolute position 0 .. ``max_positions`` - 1
  added to the token embeddings (GPT-2). Positions past the table reuse its last
  vector, max_positions - 1: every position >= L then looks like L - 1, so the model
  runs at any length and the evaluation measures what that costs (a choice: GPT-2
  raises an index error instead). It has no extension method.
* ``"sinusoidal"``: chapter 2's encoding, :func:`posenc.sinusoidal_encoding` with
  ``sinusoidal_base``, added to the token embeddings; defined at every position.
* ``"alibi"``: no code on the tokens; each head adds -m_h (q - k) to its logits,
  :func:`posenc.alibi_slopes` (Press et al., ICLR 2022).
* ``"t5"``: a learned scalar per head and bucket added to the logits, the buckets of
  :func:`posenc.t5_relative_position_bucket` (unidirectional: the model is causal), one
  table shared by every layer as in T5 (Raffel et al., JMLR 2020).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from posenc._validation import check_choice, check_positive_float, check_positive_int

#: The kinds of position signal, in the order the book lists them.
KINDS = ("nope", "learned", "sinusoidal", "rope", "alibi", "t5")
#: The kinds that add a bias to the attention logits (computed once per forward).
BIAS_KINDS = ("alibi", "t5")
#: The kinds that add a vector to the token embeddings.
ABSOLUTE_KINDS = ("learned", "sinusoidal")


@dataclass(frozen=True)
class PositionEncoding:
    """One encoding of the tiny model (the module docstring describes each kind).

    Fields that a kind does not read must stay at their defaults (a ValueError names
    the field otherwise), so equal encodings are equal specs.
    """

    kind: str = "rope"
    rope_layers: tuple[int, ...] | None = None
    partial_rotary_factor: float | None = None
    max_positions: int | None = None
    sinusoidal_base: float = 10000.0
    num_buckets: int = 32
    max_distance: int = 128

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", KINDS)
        defaults = PositionEncoding.__dataclass_fields__
        reads = {
            "rope": ("rope_layers", "partial_rotary_factor"),
            "learned": ("max_positions",),
            "sinusoidal": ("sinusoidal_base",),
            "t5": ("num_buckets", "max_distance"),
        }.get(self.kind, ())
        for name, spec in defaults.items():
            if (
                name != "kind"
                and name not in reads
                and getattr(self, name) != spec.default
            ):
                raise ValueError(
                    f"{name} is not read by kind {self.kind!r}; leave it at "
                    f"{spec.default!r}, got {getattr(self, name)!r}"
                )
        if self.rope_layers is not None:
            if not isinstance(self.rope_layers, tuple) or not self.rope_layers:
                raise TypeError(
                    f"rope_layers must be a non-empty tuple of layer indices or None, "
                    f"got {self.rope_layers!r}"
                )
            for layer in self.rope_layers:
                if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
                    raise ValueError(
                        f"rope_layers must hold layer indices >= 0, got {self.rope_layers!r}"
                    )
            if list(self.rope_layers) != sorted(set(self.rope_layers)):
                raise ValueError(
                    f"rope_layers must be sorted and distinct, got {self.rope_layers!r}"
                )
        if self.partial_rotary_factor is not None:
            share = check_positive_float(
                self.partial_rotary_factor, "partial_rotary_factor"
            )
            if share > 1:
                raise ValueError(
                    f"partial_rotary_factor must lie in (0, 1], got {share}"
                )
        if self.kind == "learned":
            if self.max_positions is None:
                raise ValueError("max_positions is required for kind 'learned'")
            check_positive_int(self.max_positions, "max_positions")
        check_positive_float(self.sinusoidal_base, "sinusoidal_base")
        check_positive_int(self.num_buckets, "num_buckets")
        check_positive_int(self.max_distance, "max_distance")

    def rotates(self, layer: int) -> bool:
        """Whether layer ``layer`` rotates its queries and keys."""
        return self.kind == "rope" and (
            self.rope_layers is None or layer in self.rope_layers
        )

    def check_layers(self, num_layers: int) -> None:
        """ValueError if ``rope_layers`` names a layer the model does not have."""
        if self.rope_layers is not None and max(self.rope_layers) >= num_layers:
            raise ValueError(
                f"rope_layers {self.rope_layers} names a layer past the model's "
                f"{num_layers}"
            )

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.rope_layers is not None:
            data["rope_layers"] = list(self.rope_layers)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> PositionEncoding:
        data = dict(data)
        if data.get("rope_layers") is not None:
            data["rope_layers"] = tuple(data["rope_layers"])
        return cls(**data)
