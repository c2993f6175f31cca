"""Which Chinese chapters are behind their English source, and which are not translated.

    python scripts/zh_status.py            # report (exit 0)
    python scripts/zh_status.py --check    # exit 1 if a translated chapter is behind
    make zh-status

Every book/zh/<name>.ipynb records the English version it translates in its notebook
metadata, `straightdope.source_blob`: the `git hash-object` of book/<name>.ipynb at the
time. A chapter is *behind* when the English file's hash is now different; the report
shows how much changed (lines added and removed, which cells) and the command that shows
the change. A Markdown page (index.md, references.md,
instructor_guide.md) may record the same in an HTML comment on its first line:
`<!-- translation_of: references.md source_blob: <sha> -->`.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MD_RECORD = re.compile(r"<!--\s*translation_of:\s*(\S+)\s+source_blob:\s*([0-9a-f]{40})\s*-->")
PAGES = ("index.md", "references.md", "instructor_guide.md")


@dataclass
class Status:
    name: str
    state: str                 # "current", "behind", "untranslated", "unrecorded"
    recorded: str = ""         # the source_blob the translation records
    current: str = ""          # the English file's hash now
    hint: list[str] = field(default_factory=list)


def git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def hash_object(root: Path, path: Path) -> str:
    proc = git(root, "hash-object", str(path))
    if proc.returncode != 0:
        raise RuntimeError(f"git hash-object {path} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def recorded_blob(path: Path) -> str:
    """The source_blob a translation records ('' if none)."""
    if path.suffix == ".ipynb":
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        return (meta.get("straightdope") or {}).get("source_blob", "")
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    match = MD_RECORD.search(first)
    return match.group(2) if match else ""


def _cells(text: str) -> list[tuple[str, str]]:
    nb = json.loads(text)
    return [(c["cell_type"], "".join(c["source"])) for c in nb.get("cells", [])]


def change_hint(root: Path, old: str, new: str, english: Path) -> list[str]:
    """What changed between the translated and the current version of an English file."""
    relative = english.relative_to(root)
    old_text = git(root, "cat-file", "blob", old)
    if old_text.returncode != 0:
        return [f"the recorded version {old[:10]} is not in this repository's objects; "
                f"compare with `git log -p -- {relative}`"]
    before, after = old_text.stdout, english.read_text(encoding="utf-8")
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    hint = [f"+{added} -{removed} lines"]
    if english.suffix == ".ipynb":
        matcher = difflib.SequenceMatcher(a=_cells(before), b=_cells(after), autojunk=False)
        changed = [f"{tag} English cells {j1}-{j2 - 1}" if j2 > j1 + 1 else
                   f"{tag} English cell {j1}" if j2 > j1 else f"{tag} {i2 - i1} cell(s) at {j1}"
                   for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
        hint.append("; ".join(changed) if changed else "cell sources equal (metadata changed)")
    hint.append(f"see the change: diff <(git cat-file blob {old[:10]}) {relative}")
    return hint


def status(root: Path = ROOT) -> list[Status]:
    book, zh = root / "book", root / "book" / "zh"
    english = sorted(book.glob("[0-9]*.ipynb")) + [book / p for p in PAGES if (book / p).is_file()]
    result = []
    for source in english:
        translation = zh / source.name
        if not translation.is_file():
            result.append(Status(source.name, "untranslated"))
            continue
        recorded, current = recorded_blob(translation), hash_object(root, source)
        if not recorded:
            result.append(Status(source.name, "unrecorded", current=current))
        elif recorded == current:
            result.append(Status(source.name, "current", recorded, current))
        else:
            result.append(Status(source.name, "behind", recorded, current,
                                 change_hint(root, recorded, current, source)))
    return result


def report(statuses: list[Status]) -> str:
    chapters = [s for s in statuses if s.name.endswith(".ipynb")]
    done = [s for s in chapters if s.state != "untranslated"]
    lines = [f"Chinese edition: {len(done)} of {len(chapters)} chapters translated; "
             f"up to date with the English: {sum(s.state == 'current' for s in statuses)}"]
    behind = [s for s in statuses if s.state == "behind"]
    if behind:
        lines.append("\nBehind the English source (translate the change, then set "
                     "source_blob to the new hash):")
        for s in behind:
            lines.append(f"  book/zh/{s.name}: translates {s.recorded[:10]}, "
                         f"English is now {s.current[:10]}")
            lines += [f"      {h}" for h in s.hint]
    unrecorded = [s for s in statuses if s.state == "unrecorded"]
    if unrecorded:
        lines.append("\nTranslated, but the English version is not recorded (add source_blob):")
        lines += [f"  book/zh/{s.name} (English is {s.current[:10]})" for s in unrecorded]
    missing = [s.name for s in statuses if s.state == "untranslated"]
    if missing:
        lines.append("\nNot translated yet:")
        lines += [f"  book/{name}" for name in missing]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a translated chapter is behind its English source")
    args = parser.parse_args(argv)
    statuses = status(args.root.resolve())
    print(report(statuses))
    return 1 if args.check and any(s.state == "behind" for s in statuses) else 0


if __name__ == "__main__":
    sys.exit(main())
