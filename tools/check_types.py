"""Type check layoutkit against a baseline that may only shrink.

``python tools/check_types.py`` runs mypy on ``layoutkit`` with the configuration of ``pyproject.toml`` (strict
for the packages in :data:`STRICT`, the default level elsewhere) and compares its errors with
``tools/mypy-baseline.txt``: one line per (file, error code, message) with the number of times it occurs.

* An error in a strict package fails the run: those packages have no baseline.
* An error the baseline does not hold (or holds fewer times) fails the run and is printed with its line.
* Fewer errors than the baseline pass, with a reminder to shrink it: ``--update`` rewrites the baseline,
  and refuses to when the total would grow.

Keys leave out line numbers (an edit above an old error does not make it new) and ``on line N`` in
messages for the same reason.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tools" / "mypy-baseline.txt"


def strict_packages(pyproject: Path = ROOT / "pyproject.toml") -> tuple[str, ...]:
    """Folders of the modules ``[[tool.mypy.overrides]]`` makes strict, by ``strict`` or by the flags it stands for
    (``disallow_untyped_defs`` marks them): ``layoutkit.tla.*`` -> ``layoutkit/tla/``."""
    import tomllib  # Python 3.11+: the type check runs on the CI Python

    conf = tomllib.loads(pyproject.read_text()).get("tool", {}).get("mypy", {})
    out: list[str] = []
    for override in conf.get("overrides", []):
        if override.get("strict") or override.get("disallow_untyped_defs"):
            mods = override["module"] if isinstance(override["module"], list) else [override["module"]]
            out += [m.removesuffix(".*").replace(".", "/") + "/" for m in mods]
    return tuple(out)


STRICT = strict_packages()
_LINE = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+)(?::\d+)?: error: (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$")


def parse(output: str) -> list[tuple[str, int, str]]:
    """``(key, line, text)`` of every error line of mypy's ``output``; key is ``path: [code] message``.

    >>> (key, line, text), = parse('a/b.py:12: error: Name "x" already defined on line 3  [no-redef]\\nFound 1 error')
    >>> key, line
    ('a/b.py: [no-redef] Name "x" already defined on line N', 12)
    """
    out = []
    for text in output.splitlines():
        m = _LINE.match(text.strip())
        if m:
            msg = re.sub(r"on line \d+", "on line N", m["msg"])
            out.append((f"{m['path']}: [{m['code'] or 'misc'}] {msg}", int(m["line"]), text.strip()))
    return out


def read_baseline(path: Path = BASELINE) -> Counter[str]:
    counts: Counter[str] = Counter()
    if path.exists():
        for row in path.read_text().splitlines():
            if row.strip() and not row.startswith("#"):
                n, key = row.split("\t", 1)
                counts[key] = int(n)
    return counts


def write_baseline(counts: Counter[str], path: Path = BASELINE) -> None:
    head = "# mypy errors allowed outside the strict packages: count<TAB>path: [code] message (tools/check_types.py)\n"
    path.write_text(head + "".join(f"{n}\t{key}\n" for key, n in sorted(counts.items())))


def new_errors(errors: list[tuple[str, int, str]], baseline: Counter[str], strict: tuple[str, ...] | None = None
               ) -> list[str]:
    """Error lines beyond what ``baseline`` allows: every error of a strict package, and for other keys the
    occurrences past the baseline's count.

    >>> errs = [("m.py: [x] a", 1, "m.py:1: a"), ("m.py: [x] a", 9, "m.py:9: a"), ("layoutkit/tla/t.py: [x] b", 2, "t")]
    >>> new_errors(errs, Counter({"m.py: [x] a": 1}), strict=("layoutkit/tla/",))
    ['m.py:9: a', 't']
    """
    strict = STRICT if strict is None else strict
    seen: Counter[str] = Counter()
    out = []
    for key, _, text in errors:
        seen[key] += 1
        if key.startswith(strict) or seen[key] > baseline[key]:
            out.append(text)
    return out


def run_mypy() -> str:
    proc = subprocess.run([sys.executable, "-m", "mypy", "layoutkit"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or "error: " not in proc.stdout and proc.returncode:
        sys.exit(f"mypy did not run: {proc.stdout}{proc.stderr}")
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite the baseline (refused when it would grow)")
    args = ap.parse_args(argv)
    errors = parse(run_mypy())
    baseline = read_baseline()
    counts = Counter(key for key, _, _ in errors)
    if args.update:
        if any(k.startswith(STRICT) for k in counts):
            print("strict packages have errors: fix them, they take no baseline")
            return 1
        if sum(counts.values()) > sum(baseline.values()) and BASELINE.exists():
            print(f"refused: {sum(counts.values())} errors > the baseline's {sum(baseline.values())}")
            return 1
        write_baseline(counts)
        print(f"baseline: {sum(counts.values())} errors in {len({k.split(':')[0] for k in counts})} files")
        return 0
    fresh = new_errors(errors, baseline)
    if fresh:
        print("\n".join(fresh))
        print(f"{len(fresh)} new type error(s) (strict packages: {', '.join(STRICT)}; baseline: {BASELINE.name})")
        return 1
    total, allowed = sum(counts.values()), sum(baseline.values())
    note = f"; the baseline can shrink by {allowed - total}: run with --update" if total < allowed else ""
    print(f"type check: {total} errors, none new (baseline {allowed}){note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
