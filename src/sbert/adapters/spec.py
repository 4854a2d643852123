"""What a LoRA adapter looks like: rank, scale, dropout, target modules; parsed from flags or TOML."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from torch import nn

from sbert.errors import SbertError

HEAD_POLICIES = ("auto", "train", "freeze")

# The attention projections, by the names the families give them; the first group a model has any of
# is the default target (PEFT matches a name against the last parts of each module's dotted name).
_ATTENTION_GROUPS = (
    ("q_proj", "k_proj", "v_proj", "o_proj"),  # Qwen2/3, Llama, Mistral, Gemma, EuroBERT
    ("query", "key", "value"),  # BERT, MiniLM, RoBERTa, XLM-R, ALBERT, ELECTRA (output is a generic `dense`)
    ("query_proj", "key_proj", "value_proj"),  # DeBERTa-v2/v3
    ("q", "k", "v", "o"),  # MPNet, T5 encoders
    ("q_lin", "k_lin", "v_lin", "out_lin"),  # DistilBERT
    ("Wqkv", "Wo"),  # ModernBERT, NomicBERT
    ("qkv_proj",),  # Phi-3
    ("query_key_value",),  # GPT-NeoX, Falcon
    ("c_attn",),  # GPT-2
)


@dataclass(frozen=True)
class LoraSpec:
    """A LoRA adapter to train: W + (alpha / r) * B @ A on each target module.

    `targets` empty: the model's attention projections. `heads`: whether the modules after the
    transformer (Dense, CNN heads) train too: "auto" trains a head built fresh for this run
    (--pooling / --dense) and freezes a loaded one.
    """

    r: int = 16
    alpha: float = 32.0
    dropout: float = 0.0
    targets: tuple[str, ...] = ()
    heads: str = "auto"

    def validate(self) -> None:
        """Refuse values LoRA cannot train with."""
        if self.r < 1:
            raise SbertError(f"lora r={self.r}: must be >= 1")
        if self.alpha <= 0:
            raise SbertError(f"lora alpha={self.alpha}: must be > 0")
        if not 0 <= self.dropout < 1:
            raise SbertError(f"lora dropout={self.dropout}: must be in [0, 1)")
        if self.heads not in HEAD_POLICIES:
            raise SbertError(f"lora heads={self.heads!r}: use {', '.join(HEAD_POLICIES)}")

    def describe(self) -> str:
        """`r=16,alpha=32,...`: the flag form, for logs and model cards."""
        targets = f",targets={','.join(self.targets)}" if self.targets else ""
        return f"r={self.r},alpha={self.alpha:g},dropout={self.dropout:g}{targets},heads={self.heads}"


_KEYS = {f.name for f in fields(LoraSpec)}


def parse_lora(value: str | Mapping[str, Any] | LoraSpec) -> LoraSpec:
    """A LoraSpec from `r=16,alpha=32,dropout=0.05,targets=query,value` or a TOML table of the same keys.

    In the string form a part without `=` continues the list before it, so `targets=q,v` names two modules.
    """
    if isinstance(value, LoraSpec):
        value.validate()
        return value
    table = _split(value) if isinstance(value, str) else dict(value)
    unknown = set(table) - _KEYS
    if unknown:
        raise SbertError(f"lora: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(_KEYS))}")
    targets = table.get("targets", ())
    if isinstance(targets, str):
        targets = [t for t in targets.split(",") if t]
    try:
        spec = LoraSpec(
            r=int(table.get("r", 16)),
            alpha=float(table.get("alpha", 2 * int(table.get("r", 16)))),
            dropout=float(table.get("dropout", 0.0)),
            targets=tuple(str(t).strip() for t in targets),
            heads=str(table.get("heads", "auto")),
        )
    except (TypeError, ValueError) as e:
        raise SbertError(f"lora {value!r}: {e}") from None
    spec.validate()
    return spec


def _split(text: str) -> dict[str, Any]:
    table: dict[str, Any] = {}
    last = ""
    for part in (p.strip() for p in text.split(",")):
        key, sep, item = part.partition("=")
        if sep:
            last = key.strip()
            table[last] = [item.strip()] if last == "targets" else item.strip()
        elif last == "targets" and part:
            table[last].append(part)
        elif part:
            raise SbertError(f"lora {text!r}: expected KEY=VALUE, got {part!r}")
    return table


def linear_names(model: nn.Module) -> list[str]:
    """The last names of the model's Linear layers (what LoRA can target), sorted and unique."""
    return sorted({name.rsplit(".", 1)[-1] for name, m in model.named_modules() if isinstance(m, nn.Linear) and name})


def choose_targets(model: nn.Module, spec: LoraSpec) -> list[str]:
    """The target module names for `model`: the spec's (each checked) or the model's attention projections."""
    have = set(linear_names(model))
    if spec.targets:
        missing = [t for t in spec.targets if t not in have]
        if missing:
            raise SbertError(
                f"lora targets={','.join(missing)}: {type(model).__name__} has no such Linear module; "
                f"it has {', '.join(sorted(have))}"
            )
        return list(spec.targets)
    for group in _ATTENTION_GROUPS:
        found = [name for name in group if name in have]
        if found:
            return found
    names = ", ".join(sorted(have))
    raise SbertError(f"lora: no known attention projection in {type(model).__name__}; name targets=... from {names}")
