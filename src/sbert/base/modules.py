"""sentence-transformers 6.2's `sentence_transformers.base.modules`: the modules every model kind shares.

sbert's own modules with 6.2's constructors (see `sbert.models`). 6.2's abstract `Module` and
`InputModule` base classes, which custom modules subclass, are not here: sbert's modules follow
sbert's own base (`sbert.modules.Module`).
"""

from sbert.models import Dense, Normalize, Router, Transformer

__all__ = ["Dense", "Normalize", "Router", "Transformer"]
