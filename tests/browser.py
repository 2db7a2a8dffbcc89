"""Open report pages in headless Chromium (Debian's ``chromium``) over the DevTools protocol and
report what a reader's browser sees: console errors, failed loads, images that do not decode,
links that do not resolve, Python reprs printed on the page (``PosixPath(``, ``array(``,
``<Figure``), tables wider than the page, and empty figures (nothing but axes drawn: no coloured
pixel). Also usable by hand::

    python tests/browser.py results/report/index.html results/report/mnist/*.html [--screenshot DIR] [--units N]

Also: a page taller than its kind allows (:data:`HEIGHT_LIMITS`, details folded), a number printed
in scientific notation for (numerical) zero (``6.684e-19``), and, with ``--units N`` (the bundle's
independent units), a caption counting its means over another number of runs or draws.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")

IMAGES_JS = """
Promise.all([...document.images].map(img => img.decode()
    .then(() => ({src: img.src.slice(0, 40), width: img.naturalWidth, height: img.naturalHeight, error: null}))
    .catch(e => ({src: img.src.slice(0, 40), width: img.naturalWidth, height: img.naturalHeight,
                  error: String(e)}))))
"""
LINKS_JS = "[...document.querySelectorAll('a[href]')].map(a => a.href)"
REPRS = ("PosixPath(", "WindowsPath(", "array(", "<Figure", "<matplotlib", "<Axes", "dtype=", "DataFrame(")
TEXT_JS = "document.body ? document.body.innerText : ''"
HEIGHT_JS = "document.documentElement.scrollHeight"
# The tallest a page of each kind may be at 1280 px with its details folded (index: the front page).
HEIGHT_LIMITS = {"index": 5000, "00_verdicts": 8000, "01_data": 5000, "02_sweeps": 13000, "03_bound": 6500,
                 "04_privacy": 3000, "05_lazy": 4000, "06_sensitivity": 9000}
# A number in scientific notation whose exponent is -10 or below: round-off printed as a number. A
# p-value is not one ("p (falls) = 2.1e-13": a probability that small is what ten units can show).
TINY = re.compile(r"(?<![\w.])\d(?:\.\d+)?e-(?:1\d|[2-9]\d|\d{3})(?![\w])")
P_VALUE = re.compile(r"\bp(?: \([^()]*\))? = $")
# "the mean over 20 runs", "over the 5 partition draws": a caption's count of what its band is over.
COUNTED = re.compile(r"over (?:the )?(\d+) (partition draws|draws|runs|seeds)\b")
# tables whose right edge lies beyond the page's width (a reader scrolls sideways or loses columns)
WIDE_TABLES_JS = """
[...document.querySelectorAll('table')].map((t, i) => ({index: i, width: Math.round(t.scrollWidth),
    page: document.documentElement.clientWidth,
    head: (t.querySelector('tr') || t).innerText.slice(0, 60).replace(/\\s+/g, ' ')}))
  .filter(t => t.width > t.page)
"""
# per image: how many pixels are coloured (not grey): a plot with nothing drawn but axes has none
COLOURED_JS = """
[...document.images].map(img => {
  const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
  if (!c.width || !c.height) return {src: img.src.slice(0, 40), coloured: -1};
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    const hi = Math.max(d[i], d[i + 1], d[i + 2]), lo = Math.min(d[i], d[i + 1], d[i + 2]);
    if (d[i + 3] > 0 && hi - lo > 40) n++;
  }
  return {src: img.src.slice(0, 40), coloured: n};
})
"""


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageCheck:
    """What one page showed in the browser."""

    path: Path
    errors: list[str] = field(default_factory=list)
    images: list[dict] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    text: str = ""
    wide_tables: list[dict] = field(default_factory=list)
    colours: list[dict] = field(default_factory=list)
    height: int = 0
    units: int | None = None  # the bundle's independent units, when the caller knows them

    @property
    def kind(self) -> str:
        return "index" if self.path.stem == "index" else self.path.stem

    @property
    def too_tall(self) -> str:
        limit = HEIGHT_LIMITS.get(self.kind)
        return f"page {self.height} px tall (a {self.kind} page: at most {limit})" if limit and (
            self.height > limit) else ""

    @property
    def tiny_numbers(self) -> list[str]:
        return sorted({m.group() for m in TINY.finditer(self.text)
                       if not P_VALUE.search(self.text[max(0, m.start() - 60):m.start()])})

    @property
    def miscounted(self) -> list[str]:
        """Captions that count their means over another number than the bundle's units."""
        if self.units is None:
            return []
        return [f"{n} {what}" for n, what in COUNTED.findall(self.text) if int(n) != self.units]

    @property
    def reprs(self) -> list[str]:
        """Python reprs printed on the page (a notebook cell's stray return value)."""
        return [r for r in REPRS if r in self.text]

    @property
    def empty_figures(self) -> list[str]:
        return [c["src"] for c in self.colours if c["coloured"] == 0]

    def problems(self) -> list[str]:
        """Everything a reader would trip over, one line each."""
        return (self.errors + [f"broken image {i}" for i in self.broken_images]
                + [f"unresolved link {u}" for u in self.unresolved_links()]
                + [f"printed repr {r!r}" for r in self.reprs]
                + [f"table wider than the page ({t['width']} > {t['page']} px): {t['head']}" for t in self.wide_tables]
                + [f"empty figure {s}" for s in self.empty_figures]
                + ([self.too_tall] if self.too_tall else [])
                + [f"number in scientific notation for zero: {t}" for t in self.tiny_numbers]
                + [f"caption counts over {m}, the bundle has {self.units} units" for m in self.miscounted])

    @property
    def broken_images(self) -> list[dict]:
        return [i for i in self.images if i["error"] or not i["width"] or not i["height"]]

    def unresolved_links(self) -> list[str]:
        """Links to local files that do not exist, and any link that leaves the machine."""
        bad = []
        for href in self.links:
            url = urllib.parse.urlsplit(href)
            if url.scheme == "file":
                if not Path(urllib.parse.unquote(url.path)).exists():
                    bad.append(href)
            elif url.scheme not in ("data", "about", ""):
                bad.append(href)
        return bad


class Browser:
    """One headless Chromium with a DevTools websocket to its first page."""

    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 900):
        import websocket  # websocket-client

        exe = executable or find_chromium()
        if exe is None:
            raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
        self._profile = tempfile.mkdtemp(prefix="bladefl-chromium-")
        self._proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--allow-file-access-from-files", f"--window-size={width},{height}", "--remote-debugging-port=0",
             f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self._profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port within 60 s")
            time.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        # generous: a busy machine starts Chromium slowly; a hang, not slowness, is what this guards against
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=600) as resp:  # not a workflow
            pages = [t for t in json.load(resp) if t["type"] == "page"]
        self._ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=600,  # not a workflow
                                               suppress_origin=True)
        self._next_id = 0
        self._events: list[dict] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params) -> dict:
        self._next_id += 1
        msg_id = self._next_id
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._events.append(msg)

    def _wait_event(self, method: str, timeout: float = 600) -> None:  # not a workflow: one page loading
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self._events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout} s")
            self._ws.settimeout(max(0.1, deadline - time.monotonic()))
            self._events.append(json.loads(self._ws.recv()))

    def check(self, page: str | Path, screenshot: str | Path | None = None, units: int | None = None) -> PageCheck:
        path = Path(page).resolve()
        self._events.clear()
        self.call("Page.navigate", url=path.as_uri())
        self._wait_event("Page.loadEventFired")
        result = PageCheck(path, units=units)
        result.height = int(self.call("Runtime.evaluate", expression=HEIGHT_JS, returnByValue=True)["result"]
                            .get("value", 0))
        images = self.call("Runtime.evaluate", expression=IMAGES_JS, awaitPromise=True, returnByValue=True)
        result.images = images["result"].get("value", [])
        links = self.call("Runtime.evaluate", expression=LINKS_JS, returnByValue=True)
        result.links = links["result"].get("value", [])
        result.text = self.call("Runtime.evaluate", expression=TEXT_JS, returnByValue=True)["result"].get("value", "")
        wide = self.call("Runtime.evaluate", expression=WIDE_TABLES_JS, returnByValue=True)
        result.wide_tables = wide["result"].get("value", [])
        colours = self.call("Runtime.evaluate", expression=COLOURED_JS, returnByValue=True)
        result.colours = colours["result"].get("value", [])
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                result.errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                             for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                result.errors.append("exception: " + params["exceptionDetails"].get("text", ""))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                result.errors.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                result.errors.append(f"load failed: {params.get('errorText')}")
        if screenshot is not None:
            shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        return result

    def close(self) -> None:
        ws = getattr(self, "_ws", None)
        if ws is not None:
            ws.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)  # not a workflow: after terminate(), then kill()
            except subprocess.TimeoutExpired:
                self._proc.kill()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="tests/browser.py", description=(
        "Open report pages in headless Chromium and list their problems (console errors, images that do not "
        "decode or show nothing, links that do not resolve, Python reprs, tables wider than the page); exit 1 "
        "where a page has one."))
    parser.add_argument("pages", nargs="+", help="the HTML pages to open")
    parser.add_argument("--screenshot", type=Path, help="a folder for a full-page PNG of each page")
    parser.add_argument("--units", type=int, help="the independent units the report's figures must name")
    args = parser.parse_args(argv)
    if args.screenshot:
        args.screenshot.mkdir(parents=True, exist_ok=True)
    failed = 0
    with Browser() as browser:
        for page in args.pages:
            shot = (args.screenshot / f"{Path(page).parent.name}_{Path(page).stem}.png") if args.screenshot else None
            r = browser.check(page, shot, args.units)
            problems = r.problems()
            failed += bool(problems)
            print(f"{page}: {len(r.images)} images, {len(r.links)} links, {r.height} px, {len(problems)} problems")
            for p in problems:
                print(f"  {p}")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))
