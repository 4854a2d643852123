"""LoRA adapters on a Hugging Face backbone through peft's own API, in PEFT's on-disk layout.

The layout is the one PEFT and sentence-transformers write: `adapter_config.json` (its
`base_model_name_or_path` says where the base weights are) and `adapter_model.safetensors`
(keys `base_model.model.<module>.lora_A.weight`), in the Transformer module's folder, with no
base weights beside them.
"""

from __future__ import annotations

import copy
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from safetensors.torch import save_file
from torch import nn

from sbert.adapters.spec import LoraSpec
from sbert.errors import ModelFormatError, SbertError, first_line
from sbert.formats.layout import read_json
from sbert.install_hint import install_hint

log = logging.getLogger(__name__)

ADAPTER_CONFIG_FILE = "adapter_config.json"
ADAPTER_WEIGHTS_FILE = "adapter_model.safetensors"
DEFAULT_ADAPTER = "default"  # the name PEFT gives the first adapter


def require_peft() -> Any:
    """The peft package, or a one-line error naming the extra that installs it."""
    try:
        import peft
    except ImportError:
        raise SbertError(f"LoRA adapters need peft: {install_hint('lora')}") from None
    return peft


def is_adapter_dir(path: Path) -> bool:
    """Whether `path` holds a PEFT adapter (adapter_config.json)."""
    return (path / ADAPTER_CONFIG_FILE).is_file()


def has_adapter(auto_model: nn.Module) -> bool:
    """Whether the backbone is wrapped by peft (checked without importing peft)."""
    return hasattr(auto_model, "peft_config") and hasattr(auto_model, "get_base_model")


def backbone(auto_model: Any) -> nn.Module:
    """The Hugging Face model under any peft wrapper."""
    return auto_model.get_base_model() if has_adapter(auto_model) else auto_model


def adapter_base(folder: Path) -> str:
    """The base model an adapter folder names (`base_model_name_or_path`), or a one-line error."""
    config = read_json(folder / ADAPTER_CONFIG_FILE)
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not base:
        raise ModelFormatError(f"{folder / ADAPTER_CONFIG_FILE}: names no base model (base_model_name_or_path)")
    if config.get("peft_type", "LORA") != "LORA":
        raise ModelFormatError(f"{folder / ADAPTER_CONFIG_FILE}: peft_type {config['peft_type']}; sbert loads LORA")
    return str(base)


def wrap_lora(auto_model: nn.Module, spec: LoraSpec, targets: list[str]) -> nn.Module:
    """The backbone with a fresh trainable LoRA adapter on `targets` (B = 0, so the vectors start unchanged).

    peft freezes every base weight; only the adapter's A and B matrices train.
    """
    peft = require_peft()
    config = peft.LoraConfig(r=spec.r, lora_alpha=spec.alpha, lora_dropout=spec.dropout, target_modules=targets,
                             bias="none")  # fmt: skip
    with _quiet():
        wrapped = peft.get_peft_model(auto_model, config)
    wrapped.peft_config[DEFAULT_ADAPTER].base_model_name_or_path = auto_model.name_or_path or None
    return wrapped


def load_adapter(auto_model: Any, folder: Path, name: str = DEFAULT_ADAPTER, base: str = "") -> nn.Module:
    """`auto_model` with the adapter in `folder` added under `name` (and made active); shape errors say both."""
    peft = require_peft()
    try:
        if has_adapter(auto_model):
            if name in auto_model.peft_config:
                raise SbertError(f"an adapter named {name!r} is already loaded; pick another name")
            with _quiet():
                auto_model.load_adapter(str(folder), adapter_name=name, is_trainable=True)
            auto_model.set_adapter(name)
            return auto_model
        with _quiet():
            return peft.PeftModel.from_pretrained(auto_model, str(folder), adapter_name=name, is_trainable=True)
    except RuntimeError as e:
        mismatch = re.search(r"size mismatch for [^\n]*", str(e))
        raise ModelFormatError(
            f"{folder}: the adapter does not fit the base model {base or auto_model.name_or_path} "
            f"({mismatch.group(0) if mismatch else first_line(e)})"
        ) from None
    except (ValueError, KeyError, OSError) as e:
        raise ModelFormatError(f"{folder}: cannot load the adapter ({first_line(e)})") from None


def save_adapter(auto_model: Any, path: Path) -> None:
    """Write the active adapter as PEFT does: adapter_config.json and adapter_model.safetensors."""
    peft = require_peft()
    name = active_adapter(auto_model)
    config = copy.deepcopy(auto_model.peft_config[name])
    if not config.base_model_name_or_path:
        raise SbertError(
            "cannot save the adapter alone: its base model was never read from a folder or the Hub "
            "(save with merge_adapter=True to write the whole model)"
        )
    config.inference_mode = True
    state = peft.get_peft_model_state_dict(auto_model, adapter_name=name)
    save_file({k: v.detach().contiguous().cpu() for k, v in state.items()}, str(path / ADAPTER_WEIGHTS_FILE),
              metadata={"format": "pt"})  # fmt: skip
    config.save_pretrained(str(path))


def active_adapter(auto_model: Any) -> str:
    """The name of the adapter the backbone runs."""
    active = auto_model.active_adapter
    return str(active[0] if isinstance(active, list) else active)


def merged(auto_model: Any, in_place: bool = False) -> nn.Module:
    """The plain backbone with the active adapter folded into its weights (a copy unless `in_place`)."""
    if not has_adapter(auto_model):
        return auto_model
    model = auto_model if in_place else copy.deepcopy(auto_model)
    return model.merge_and_unload()


def parameter_counts(module: nn.Module) -> tuple[int, int]:
    """(trainable, total) parameters of `module`."""
    params = list(module.parameters())
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)


@contextmanager
def _quiet() -> Iterator[None]:
    # peft 0.21 calls a transformers 5 method that warns of its own deprecation on every wrap.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield
