"""``python -m protosim ...``: the same command line as ``protosim`` (``protosim.cli``)."""

from protosim.cli import console

raise SystemExit(console())
