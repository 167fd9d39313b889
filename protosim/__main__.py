"""``python -m protosim ...``: the same command line as ``protosim`` (``protosim.cli``)."""

from protosim.cli import main

raise SystemExit(main())
