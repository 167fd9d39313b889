"""Views of a replay's timeline (``protosim.timeline``): a Chrome / Perfetto trace
(``trace``), a PNG Gantt chart (``plot``, needs matplotlib) and a self-contained
HTML page (``html``).  Each only draws what the timeline holds."""
