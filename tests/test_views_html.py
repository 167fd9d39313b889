"""The HTML report (``protosim.views.html``): checked as text, then in headless Chromium.

The browser tests drive Debian's ``chromium`` over the DevTools pipe (``cdp_pipe``),
so they need no Python package beyond the standard library; without chromium they
skip.  ``PROTOSIM_UPDATE_SCREENSHOT=1`` also rewrites ``docs/report.png`` (the
v2_no_phase_flip page with the first finding hovered).
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import shutil
import struct
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from cdp_pipe import Chromium

from protosim.explain import explain, primary
from protosim.scenarios import load_scenario
from protosim.timeline import Marker, Slice, Timeline, build_timeline
from protosim.verdict import judge
from protosim.views.html import LARGE_TIMELINE, render, timeline_data

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
HOSTILE = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def _report(name: str, max_ctas: int = 8) -> SimpleNamespace:
    sc = load_scenario(ROOT / "scenarios" / f"{name}.toml")
    verdict, result = judge(sc.build())
    tl = build_timeline(result, verdict.findings, verdict.outcome.kind, max_ctas=max_ctas, first=primary(verdict.findings))
    text = explain(verdict, result, title=sc.name)
    return SimpleNamespace(timeline=tl, verdict=verdict, explanation=text, title=sc.name,
                           page=render(tl, verdict, text, sc.name))


def _embedded(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', page, re.DOTALL)
    assert m, "no timeline-data script in the page"
    return json.loads(m.group(1))


def _synthetic(n: int) -> Timeline:
    """One CTA with ``n`` short slices (far more than pixels) and one finding."""
    tracks = ["mma.w0", "mma.w1", "TMA", "MMA"]
    cats = ["wait", "copy", "tma", "mma"]
    slices = [Slice(0, tracks[i % 4], f"op {i}", 4.0 * i, 4.0 * i + 3, cats[i % 4], {"i": i}) for i in range(n)]
    marker = Marker(0, "mma.w0", 2.0 * n, "raw_hazard", "a read saw stale data", {"barrier": "bar"}, first=True)
    return Timeline("synthetic", "b200", 1.965, 4.0 * n, 1, [0], {0: tracks}, slices, [], [], [marker], "wrong")


@pytest.fixture(scope="module")
def v2() -> SimpleNamespace:
    return _report("v2_no_phase_flip")


# -- the page as text -----------------------------------------------------------------------

def test_page_is_self_contained(v2):
    page = v2.page
    assert page.startswith("<!doctype html>")
    assert not re.findall(r'(?:src|href)\s*=\s*["\']?\s*(?:[a-z]+:)?//', page, re.IGNORECASE), "a src/href points off the page"
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<link\b", page, re.IGNORECASE), "no external stylesheets or fonts"
    for api in ("fetch(", "XMLHttpRequest", "@import", "WebSocket", "import("):
        assert api not in page, api
    assert page.count("<script") == 2  # the data and the drawing script, both inline


def test_timeline_json_is_embedded_and_parses_back(v2):
    data = _embedded(v2.page)
    assert data == json.loads(json.dumps(timeline_data(v2.timeline)))
    assert len(data["slices"]) == len(v2.timeline.slices) > 50
    assert [m["kind"] for m in data["markers"]] == [m.kind for m in v2.timeline.markers]
    first = [m for m in data["markers"] if m["first"]]
    assert len(first) == 1 and first[0]["kind"] == "early_return"
    assert first[0]["evidence"]["barrier"] == "mma_bar"


def test_verdict_findings_explanation_and_timing_are_shown(v2):
    page, verdict = v2.page, v2.verdict
    assert html.escape(verdict.outcome.summary()) in page
    for f in verdict.findings:
        assert html.escape(f.message) in page, f.kind
    assert f'<pre id="explanation">{html.escape(v2.explanation)}</pre>' in page
    t = verdict.timing
    assert f"{t.cycles:,.0f}" in page and f"{t.microseconds:.2f} µs" in page
    assert "L2 hit rate" in page and "MMA busy" in page
    for role, per in t.stall.items():
        for what, cycles in per.items():
            assert re.search(rf"<td>{re.escape(role)}</td><td>{re.escape(what)}</td><td class=\"num\">{cycles:,.0f}</td>", page)


def test_hostile_text_is_escaped(v2):
    page = _hostile_page(v2)
    assert HOSTILE not in page and "<img" not in page
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert html.escape(HOSTILE) in page  # title, findings table
    assert _embedded(page)["markers"][0]["message"] == HOSTILE  # the JSON still carries it intact


def _hostile_page(v2) -> str:
    tl = dataclasses.replace(v2.timeline, markers=[dataclasses.replace(m, message=HOSTILE) for m in v2.timeline.markers])
    verdict = dataclasses.replace(v2.verdict, findings=[dataclasses.replace(f, message=HOSTILE) for f in v2.verdict.findings])
    return render(tl, verdict, HOSTILE, HOSTILE)


def test_the_note_is_shown_when_ctas_are_left_out(v2):
    assert 'id="timeline-note"' not in v2.page  # one CTA: nothing left out
    r = _report("v6_persistent")
    assert r.timeline.note.startswith("showing 8 of 16 CTAs")
    assert f'<p class="notice" id="timeline-note">{html.escape(r.timeline.note)}</p>' in r.page


def test_a_large_timeline_says_it_merges(v2):
    assert 'id="large-note"' not in v2.page
    page = render(_synthetic(LARGE_TIMELINE + 1), v2.verdict, "", "big")
    assert 'id="large-note"' in page and "merged" in page


def test_bad_input_is_named(v2):
    with pytest.raises(TypeError, match="timeline must be a protosim.timeline.Timeline"):
        render({}, v2.verdict, "", "x")
    with pytest.raises(TypeError, match="verdict must be"):
        render(v2.timeline, None, "", "x")
    with pytest.raises(TypeError, match="explanation must be a str"):
        render(v2.timeline, v2.verdict, None, "x")


# -- the page in a browser --------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    with Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile")) as b:
        yield b


def _open(browser, page_html: str, path: Path):
    path.write_text(page_html, encoding="utf-8")
    page = browser.new_page(1400, 1000)
    page.navigate(path.as_uri())
    page.frames()
    return page


def _center(page, selector: str) -> list[float]:
    """A point inside the first element matching ``selector`` where that element is on top (hoverable)."""
    point = page.evaluate(f"""(() => {{
        const e = document.querySelector({json.dumps(selector)});
        if (!e) return null;
        const r = e.getBoundingClientRect();
        for (const fy of [0.5, 0.3, 0.7])
            for (const fx of [0.5, 0.25, 0.75, 0.1, 0.9]) {{
                const x = r.x + r.width * fx, y = r.y + r.height * fy;
                if (document.elementFromPoint(x, y) === e) return [x, y];
            }}
        return null;
    }})()""")
    assert point, f"no visible, uncovered {selector}"
    return point


def _range(page) -> tuple[float, float]:
    return tuple(page.evaluate("[+document.getElementById('range').dataset.t0, +document.getElementById('range').dataset.t1]"))


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", png[16:24])


@needs_chromium
def test_report_renders_zooms_and_explains_on_hover(v2, browser, tmp_path):
    path = tmp_path / "report.html"
    page = _open(browser, v2.page, path)
    assert page.errors() == []
    assert page.requests() == [path.as_uri()], "the page loaded something besides itself"

    # Rendered: every slice of this small timeline is a bar, plus rows, markers and flows.
    assert page.evaluate("document.querySelectorAll('#tl .slice').length") == len(v2.timeline.slices)
    assert page.evaluate("document.querySelectorAll('#tl .finding-marker').length") == len(v2.timeline.markers)
    assert page.evaluate("document.querySelectorAll('#tl .flow').length") == len(v2.timeline.flows)

    # Hover a slice: name, cycles and µs.
    x, y = _center(page, "#tl .slice.cat-wait")
    page.mouse("mouseMoved", x, y)
    tip = page.evaluate("document.getElementById('tooltip').textContent")
    assert "wait mma_bar parity" in tip and "cycles" in tip and "µs" in tip

    # Hover the barrier row: the phase and its counters.
    x, y = _center(page, "#tl .ctr")
    page.mouse("mouseMoved", x, y)
    tip = page.evaluate("document.getElementById('tooltip').textContent")
    assert "mbarrier mma_bar" in tip and "pending arrivals" in tip and "tx-count" in tip

    # Hover the first finding: kind, message and evidence (the barrier) in the tooltip.
    x, y = _center(page, "#tl .finding-marker.first")
    page.mouse("mouseMoved", x, y)
    assert page.evaluate("document.getElementById('tooltip').hidden") is False
    tip = page.evaluate("document.getElementById('tooltip').textContent")
    first = primary(v2.verdict.findings)
    assert first.kind == "early_return"
    assert "early_return" in tip and first.message in tip and "mma_bar" in tip and "satisfied_by_phase" in tip
    png = page.screenshot()
    assert _png_size(png) == (1400, 1000) and len(png) > 30_000
    (tmp_path / "report.png").write_bytes(png)
    if os.environ.get("PROTOSIM_UPDATE_SCREENSHOT") == "1":
        (ROOT / "docs" / "report.png").write_bytes(png)

    # Ctrl + wheel zooms in at the pointer; the view narrows around it and fewer bars are drawn.
    t0, t1 = _range(page)
    page.mouse("mouseMoved", x, y + 300)  # off the marker, away from the tooltip
    page.mouse("mouseWheel", x, y, deltaX=0, deltaY=-600, modifiers=2)
    page.frames()
    z0, z1 = _range(page)
    assert t0 <= z0 < z1 <= t1 and (z1 - z0) < (t1 - t0) / 2
    assert z0 < first.cycle < z1
    assert page.evaluate("document.querySelectorAll('#tl .slice').length") < len(v2.timeline.slices)

    # The + button zooms further; a drag to the right pans back in time by the same span.
    page.evaluate("document.getElementById('zoom-in').click()")
    page.frames()
    p0, p1 = _range(page)
    assert (p1 - p0) < (z1 - z0)
    page.mouse("mousePressed", 700, y, button="left", buttons=1, clickCount=1)
    page.mouse("mouseMoved", 900, y, button="left", buttons=1)
    page.mouse("mouseReleased", 900, y, button="left", buttons=0, clickCount=1)
    page.frames()
    d0, d1 = _range(page)
    assert d0 < p0 and d1 - d0 == pytest.approx(p1 - p0)

    page.evaluate("document.getElementById('zoom-reset').click()")
    page.frames()
    assert _range(page) == (t0, t1)
    assert page.errors() == []


@needs_chromium
def test_hostile_text_stays_text_in_the_browser(v2, browser, tmp_path):
    page = _open(browser, _hostile_page(v2), tmp_path / "hostile.html")
    x, y = _center(page, "#tl .finding-marker.first")
    page.mouse("mouseMoved", x, y)
    assert HOSTILE in page.evaluate("document.getElementById('tooltip').textContent")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.title").startswith(HOSTILE)
    assert page.errors() == []


@needs_chromium
def test_an_empty_timeline_renders_without_errors(v2, browser, tmp_path):
    empty = Timeline("empty", "b200", 1.965, 0.0, 0, [], {}, [], [], [], [], "correct")
    page = _open(browser, render(empty, v2.verdict, "", "empty"), tmp_path / "empty.html")
    assert "no CTAs" in page.evaluate("document.getElementById('tl').textContent")
    page.evaluate("document.getElementById('zoom-in').click()")
    page.frames()
    assert page.errors() == []


@needs_chromium
def test_a_large_timeline_draws_only_what_is_in_view(v2, browser, tmp_path):
    n = 3 * LARGE_TIMELINE // 2
    start = time.monotonic()
    page = _open(browser, render(_synthetic(n), v2.verdict, "", "big"), tmp_path / "big.html")
    assert time.monotonic() - start < 60  # drawing every bar takes minutes; room for a loaded CI machine
    bars = page.evaluate("document.querySelectorAll('#tl .slice').length")
    merged = page.evaluate("+document.getElementById('drawn').dataset.merged")
    assert 0 < bars < n // 4 and merged > 0
    assert "merge" in page.evaluate("document.getElementById('drawn').textContent")
    x, y = _center(page, "#tl .slice.merged")
    page.mouse("mouseMoved", x, y)
    assert "slices merged" in page.evaluate("document.getElementById('tooltip').textContent")
    for _ in range(8):  # 256x: each slice is now several pixels wide
        page.evaluate("document.getElementById('zoom-in').click()")
    page.frames()
    assert page.evaluate("+document.getElementById('drawn').dataset.merged") == 0
    assert 0 < page.evaluate("document.querySelectorAll('#tl .slice').length") < n // 100
    assert page.errors() == []


@pytest.mark.slow
@needs_chromium
def test_full_chip_report_in_the_browser(browser, tmp_path):
    r = _report("v6_full_chip_h200")  # ~30 s replay: 132 CTAs, 8 shown
    assert "showing 8 of 132 CTAs" in r.page and 'id="large-note"' in r.page
    page = _open(browser, r.page, tmp_path / "full.html")
    assert page.evaluate("document.querySelectorAll('#tl .slice').length") > 300
    assert page.evaluate("+document.getElementById('drawn').dataset.merged") > 0  # 26,872 slices on ~1,200 px
    assert page.evaluate("document.getElementById('timeline-note').offsetHeight") > 0
    # A redraw (zoom in, wait for the frame) stays interactive.
    ms = page.evaluate("""(async () => {
        const t = performance.now();
        document.getElementById('zoom-in').click();
        await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
        return performance.now() - t;
    })()""")
    assert ms < 1000
    assert page.errors() == []
