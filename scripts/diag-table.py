#!/usr/bin/env python3
"""Rewrites the counter table of docs/posture.md from src/diagnostics.rs (the one list)."""
import re
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
src = (root / "src/diagnostics.rs").read_text()
rows = re.findall(r'^\s+\w+ => "([a-z0-9_]+)", "((?:[^"\\]|\\.)*)";', src, re.M)
table = "| counter | meaning |\n|---|---|\n" + "".join(f"| `{n}` | {d} |\n" for n, d in rows)
doc_path = root / "docs/posture.md"
doc = doc_path.read_text()
start = doc.index("| counter | meaning |")
end = doc.index("`unknown_events` counts")
doc_path.write_text(doc[:start] + table + "\n" + doc[end:])
print(f"{len(rows)} counters")
