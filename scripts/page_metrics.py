"""Print the page measurements the browser test wrote (_build/page-metrics/*.json) as a table.

    make browser; .venv/bin/python scripts/page_metrics.py [--images]

One line per page: length in screens at 1280 x 900, the share of visible code, the
smallest drawn/designed ratio of its figures, images without alt text, tooling words,
punctuation-only lines, the page width at 390 px, and whether the first screen shows a figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

METRICS = Path(__file__).resolve().parents[1] / "_build" / "page-metrics"


def main() -> None:
    show_images = "--images" in sys.argv[1:]
    print(
        f"{'page':38} {'screens':>7} {'code':>5} {'min fig':>7} {'no alt':>6} "
        f"{'tool':>4} {'punct':>5} {'phone':>5} first-fig"
    )
    for path in sorted(METRICS.glob("*.json")):
        m = json.loads(path.read_text(encoding="utf-8"))
        shown = [i for i in m["images"] if i["shown"] and i["designed"]]
        smallest = min((i["drawn"] / i["designed"] for i in shown), default=1.0)
        no_alt = sum(1 for i in m["images"] if not i["alt"])
        first = any(
            i["in_main"] and i["shown"] and i["top"] + i.get("height", 0) / 2 <= 900
            for i in m["images"]
        )
        print(
            f"{path.stem:38} {m['screens']:7.1f} {m['code_share']:5.0%} {smallest:7.0%} "
            f"{no_alt:6d} {len(m['tooling']):4d} {len(m['stray']):5d} "
            f"{m['phone_width']:5d} {'yes' if first else 'no'}"
        )
        if show_images:
            for i in shown:
                print(f"    {i['drawn']:5.0f}/{i['designed']:5.0f}  {i['src'][-30:]}")


if __name__ == "__main__":
    main()
