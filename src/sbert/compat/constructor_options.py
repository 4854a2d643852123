"""What the drop-in constructors do with sentence-transformers' keywords that sbert has no use for.

sentence-transformers' model constructors take hub and loading options (where to download from, which
revision, a token, kernels from the hub, remote code) that mean nothing when sbert loads a local folder
offline: they are accepted and dropped. Options that would change the model or its tokenization when
sentence-transformers applies them (a config override, tokenizer settings, modules kept in fp32, loading
keywords other than the dtype) sbert does not apply: a warning names each one given, so a script still
runs and nobody believes it took effect. A keyword sbert cannot honour at all (REFUSED) is a one-line
error. Any other keyword is a TypeError, as the reference's constructors (which take no **kwargs) give for
it, so a misspelt option is not dropped in silence.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from sbert.errors import SbertError

# Loading options with nothing to do for a local folder read offline.
OFFLINE_OPTIONS = frozenset({"cache_folder", "revision", "local_files_only", "token", "use_auth_token",
                             "use_kernels", "kernel_config", "trust_remote_code"})  # fmt: skip
# Options that change what sentence-transformers builds, which sbert does not apply.
NOT_APPLIED = frozenset({"processor_kwargs", "config_kwargs", "keep_in_fp32_modules", "model_kwargs"})
# model_kwargs' keys that sbert reads (the weights' dtype) or that cannot change a vector (the attention kernel).
MODEL_KWARGS_READ = frozenset({"dtype", "torch_dtype", "attn_implementation"})
# (class, keyword) -> what to do instead: given a value, ignoring it would build another model than asked.
REFUSED = {("CrossEncoder", "modules"): "save the modules with sentence-transformers and load the folder"}


def check_options(cls_name: str, options: Mapping[str, Any], model_kwargs: Mapping[str, Any] | None = None) -> None:
    """Drop `options` (keywords no parameter of `cls_name` took) as the module docstring says; warn or raise.

    `model_kwargs`: the constructor's own model_kwargs, when it reads their dtype (its other keys are warned of).
    """
    for name, value in options.items():
        instead = REFUSED.get((cls_name, name))
        if instead is not None and value is not None:
            raise SbertError(f"{cls_name}({name}=[...]) is not built by sbert: {instead}")
    known = OFFLINE_OPTIONS | NOT_APPLIED | {name for cls, name in REFUSED if cls == cls_name}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"{cls_name}.__init__() got an unexpected keyword argument {unknown[0]!r}")
    dropped = {k: v for k, v in options.items() if k in NOT_APPLIED and v}
    extra = {k: v for k, v in (model_kwargs or {}).items() if k not in MODEL_KWARGS_READ}
    if extra:
        dropped["model_kwargs"] = extra
    if dropped:
        said = ", ".join(f"{k}={v!r}" for k, v in sorted(dropped.items()))
        warnings.warn(f"{cls_name}: sbert does not apply {said} (docs/migrating.md)", UserWarning, stacklevel=3)
