"""Hand-grading, question by question: the pages teaching assistants read and the sheets they fill.

``make grade`` (``grading/grade.py``) keeps, for every submission, the cells of its written
(``manual: true``) questions with the outputs the grader's run gave them
(``results/<student>/answers.json``: ``keep``), then writes (``write``), in ``GRADES``:

- ``manual/<q>.html``, one page per written question: its prompt and rubric (with the
  calibration set and the decisions on ambiguous cases, from the master: a variant's master when
  grading a variant) at the top, then every submission's answer (its markdown and code cells,
  and the outputs of the grader's run, not the ones saved in the file), each under a code
  instead of the student's name, in a shuffled order of its own;
- ``manual/<q>-scores.csv``, the sheet to fill: one row per code, in the page's order, and a
  column per rubric item (``q6.1`` ... with the item's points in its header) and ``comment``;
- ``manual-key.csv`` (beside, not inside, ``manual/``: give TAs the folder, keep the key): the
  code of every student. The codes are kept from one run to the next (a sheet filled after one
  run still merges after a re-run); new students get new codes.

The pages run nothing a submission wrote: markdown is rendered without raw HTML, outputs as text and PNG
images only (an output's HTML is shown as its text), so a submission cannot run code in the
reader's browser; the only script is MathJax (``manual/mathjax/``, the copy the book's build
uses, with its "safe" extension), which typesets the math offline.
A browser prints a page to PDF (each answer starts a page).

``merge`` (``make grade ... MANUAL="<sheet> ..."``) reads the filled sheets and rewrites
``grades.csv`` with a column per question, autograded and written, and the totals
``autograded``, ``hand-graded``, ``total`` (of ``possible``); it refuses, naming the row, a
sheet with a missing row, an unknown or repeated code, an empty or non-numeric score, a score
above its rubric item's points, a column that is no item, or a written question no sheet
covers. The autograded columns are kept in ``grades-autograded.csv``, so merging again (a
corrected sheet) starts from them.

    python grading/manual.py GRADES_DIR SHEET [SHEET ...]
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import random
import re
import secrets
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY = "manual-key.csv"
AUTOGRADED = "grades-autograded.csv"
NOTED = "manual-autograder.txt"


sys.path.insert(0, str(Path(__file__).resolve().parent))  # grading/'s scripts import each other by name
import rubrics  # noqa: E402


@dataclass
class Question:
    """A written question: its name (q5), points, title, prompt, rubric and rubric items."""

    name: str
    points: Fraction
    title: str
    prompt: str
    rubric: str
    items: list  # [(label, points)]


def master_for(zip_path: Path) -> Path:
    """The master an autograder was made from: a variant's own (``.../master/<name>.ipynb``
    beside its ``autograder/``) or the public one in ``assignments/``."""
    name = zip_path.name.split("-autograder_")[0]
    variant = zip_path.parent.parent / "master" / f"{name}.ipynb"
    return variant if variant.is_file() else ROOT / "assignments" / name / f"{name}.ipynb"


def questions(master: Path) -> list[Question]:
    """The written questions of a master, with their rubric items."""
    return [Question(n, p, t, pr, r, rubrics.rubric_items(r)) for n, p, t, pr, r, _ in rubrics.written_questions(master)]


def answer_cells(cells: list) -> dict[str, list]:
    """{question: its cells} of a notebook's written questions: the cells between the markdown cell
    that opens it (Otter's ``<!-- BEGIN QUESTION -->`` and the heading "Question N") and the one
    that closes it (``<!-- END QUESTION -->``), the handed-out prompt left out."""
    found, current = {}, None
    for cell in cells:
        source = "".join(cell.get("source", "")) if isinstance(cell, dict) else ""
        marker = cell.get("cell_type") == "markdown" and "<!-- " in source
        if marker and "<!-- END QUESTION -->" in source:
            current = None
        if marker and "<!-- BEGIN QUESTION -->" in source:
            number = re.search(r"Question (\d+)", source)
            current = f"q{number.group(1)}" if number else None
            if current:
                found[current] = []
            continue
        if current is not None:
            found[current].append({k: cell.get(k) for k in ("cell_type", "source", "outputs") if k in cell})
    return found


def keep(folder: Path, executed: dict | None, submitted: Path) -> None:
    """Write folder/answers.json: the written questions' cells of the notebook as the grader ran
    it (executed), or as submitted (its saved outputs, marked so) where it did not run."""
    cells = (executed or {}).get("cells")
    source = "graded run"
    if not isinstance(cells, list):
        source = "as submitted (the grader did not run it)"
        try:
            cells = json.loads(submitted.read_bytes()).get("cells", [])
        except (OSError, ValueError, AttributeError):
            cells = []
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "answers.json").write_text(json.dumps({"outputs": source, "questions": answer_cells(cells)}))


def codes(output: Path, students: list[str]) -> dict[str, str]:
    """{student: code}, from output/manual-key.csv, with new codes for students not in it."""
    path = output / KEY
    known = {}
    if path.is_file():
        with path.open(newline="") as handle:
            known = {row["student"]: row["code"] for row in csv.DictReader(handle)}
    taken = set(known.values())
    for student in students:
        while student not in known:
            code = "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(5))
            if code not in taken:
                known[student] = code
                taken.add(code)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "code"])
        writer.writerows(sorted(known.items()))
    return known


PLACEHOLDER = "_Type your answer here, replacing this text._"  # Otter's, in the handed-out notebook
# MathJax as the book's build ships it (sphinx-mathjax-offline): one file, fonts included.
# With its "safe" extension, which drops what TeX could link or style (\\href, \\style, ...).
MATHJAX = Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax"


def _markdown(text: str, inline: bool = False) -> str:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    parser = MarkdownIt("commonmark", {"html": False}).enable("table").use(dollarmath_plugin)
    rendered = parser.renderInline(text) if inline else parser.render(text)
    rendered = re.sub(r'(<span class="math inline">)(.*?)(</span>)', r"\1\\(\2\\)\3", rendered, flags=re.S)
    return re.sub(r'(<div class="math block">)(.*?)(</div>)', r"\1\\[\2\\]\3", rendered, flags=re.S)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _outputs(outputs: list) -> str:
    """A code cell's outputs as HTML: text escaped, PNG images inline, nothing else."""
    parts = []
    for output in outputs or []:
        kind = output.get("output_type")
        data = output.get("data", {})
        if kind == "stream":
            parts.append(f'<pre class="out">{html.escape(_text(output.get("text")))}</pre>')
        elif kind == "error":
            trace = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.get("traceback", [])))
            parts.append(f'<pre class="error">{html.escape(trace or output.get("ename", ""))}</pre>')
        elif "image/png" in data and re.fullmatch(r"[A-Za-z0-9+/=\s]+", _text(data["image/png"])):
            parts.append(f'<img alt="figure" src="data:image/png;base64,{_text(data["image/png"]).strip()}">')
        elif data:
            shown = data.get("text/plain") or next(iter(data.values()))
            parts.append(f'<pre class="out">{html.escape(_text(shown))}</pre>')
    return "".join(parts)


def _answer(cells: list) -> str:
    parts = []
    for cell in cells:
        source = _text(cell.get("source"))
        if cell.get("cell_type") == "markdown" and source.strip() != PLACEHOLDER:
            parts.append(f'<div class="md">{_markdown(source)}</div>')
        elif cell.get("cell_type") == "code" and source.strip() not in ("", "..."):
            parts.append(f'<pre class="code">{html.escape(source)}</pre>' + _outputs(cell.get("outputs")))
    return "".join(parts) or "<p><em>No answer.</em></p>"


STYLE = """body{font-family:sans-serif;max-width:52em;margin:auto;padding:1em;line-height:1.4}
pre{white-space:pre-wrap;padding:.4em;border-radius:4px}.code{background:#f3f3f3}.out{background:#eef6ee}
.error{background:#fbeaea}table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.2em .4em}
section.answer{border-top:3px solid #444;margin-top:2em;break-before:page}img{max-width:100%}
header.rubric{background:#fffbe6;padding:.5em 1em}"""


def page(assignment: str, question: Question, answers: list[tuple[str, str, list]]) -> str:
    """The HTML page of a written question: the prompt and the rubric, then each (code, where its
    outputs come from, cells) answer."""
    items = "".join(f"<li><b>{question.name}.{i}</b> ({float(p):g} points): {_markdown(label, inline=True)}</li>"
                    for i, (label, p) in enumerate(question.items, 1))
    sections = "".join(f'<section class="answer"><h2>Answer {code}</h2><p class="src">Outputs: {html.escape(src)}'
                       f"</p>{_answer(cells)}</section>" for code, src, cells in answers)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{assignment} {question.name}</title>"
            f"<style>{STYLE}</style><script>window.MathJax={{loader:{{load:['ui/safe']}}}};</script>"
            "<script defer src='mathjax/tex-svg.js'></script></head><body>"
            f"<h1>{html.escape(assignment)} {question.name}: {html.escape(question.title)}</h1>"
            f"<header class='rubric'>{_markdown(question.prompt)}{_markdown(question.rubric)}"
            f"<p>Score sheet: <code>{question.name}-scores.csv</code>, one column per item:</p><ol>{items}</ol></header>"
            f"<p>{len(answers)} answers, each under a code, in a shuffled order.</p>{sections}</body></html>\n")


def item_columns(question: Question) -> list[str]:
    """The sheet's columns of a question's rubric items: ``q6.1 (0.5)`` ..."""
    return [f"{question.name}.{i} ({float(p):g})" for i, (_, p) in enumerate(question.items, 1)]


def write(zip_path: Path, output: Path, students: list[str]) -> list[Path]:
    """The page and the sheet of every written question of the assignment graded with zip_path,
    from the answers keep() wrote in output/results/<student>/; the files written."""
    folder = output / "manual"
    shutil.rmtree(folder, ignore_errors=True)
    found = questions(master_for(zip_path))
    if not found:
        return []
    folder.mkdir(parents=True)
    if (MATHJAX / "tex-svg.js").is_file():
        for part in ("tex-svg.js", "ui/safe.js"):
            (folder / "mathjax" / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(MATHJAX / part, folder / "mathjax" / part)
    (output / NOTED).write_text(f"{zip_path.resolve()}\n")
    (output / AUTOGRADED).unlink(missing_ok=True)  # a new run's grades.csv is the autograded one
    key = codes(output, students)
    kept = {}
    for student in students:
        path = output / "results" / student / "answers.json"
        kept[student] = json.loads(path.read_text()) if path.is_file() else {
            "outputs": "none (the notebook could not be graded)", "questions": {}}
    written = []
    for question in found:
        order = sorted(students, key=lambda s: key[s])
        random.Random(f"{question.name}:{''.join(sorted(key.values()))}").shuffle(order)
        answers = [(key[s], kept[s]["outputs"], kept[s]["questions"].get(question.name, [])) for s in order]
        html_path = folder / f"{question.name}.html"
        html_path.write_text(page(zip_path.name.split("-autograder_")[0], question, answers))
        sheet = folder / f"{question.name}-scores.csv"
        with sheet.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["code", *item_columns(question), "comment"])
            writer.writerows([key[s], *[""] * len(question.items), ""] for s in order)
        written += [html_path, sheet]
    return written


class SheetError(ValueError):
    """A filled sheet that cannot be merged (the message names the sheet, the row and why)."""


def _score(text: str, where: str, most: Fraction) -> Fraction:
    text = text.strip().replace("½", "1/2")
    if not text:
        raise SheetError(f"{where}: no score (write 0 for none)")
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise SheetError(f"{where}: {text!r} is not a number") from None
    if value < 0 or value > most:
        raise SheetError(f"{where}: {float(value):g} is outside 0 to {float(most):g}, the rubric item's points")
    return value


def read_sheets(sheets: list[Path], found: list[Question], key: dict[str, str],
                students: list[str]) -> dict[str, dict[str, Fraction]]:
    """{student: {question: hand-graded score}} from the filled sheets, every check applied."""
    by_code = {code: student for student, code in key.items() if student in students}
    items = {f"{q.name}.{i}": (q, p) for q in found for i, (_, p) in enumerate(q.items, 1)}
    scores: dict[str, dict[str, Fraction]] = {}
    covered: dict[str, Path] = {}
    for sheet in sheets:
        with sheet.open(newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            if "code" not in header:
                raise SheetError(f"{sheet}: no 'code' column")
            columns = {}
            for column in header:
                if column in ("code", "comment"):
                    continue
                name = column.split(" ", 1)[0]
                if name not in items:
                    raise SheetError(f"{sheet}: column {column!r} is no rubric item of "
                                     f"{', '.join(q.name for q in found)}")
                columns[column] = name
            asked = {items[n][0].name for n in columns.values()}
            for name in asked:
                if name in covered:
                    raise SheetError(f"{sheet}: {name} is already graded in {covered[name]}")
                covered[name] = sheet
                missing = [c for c in item_columns(items[f'{name}.1'][0]) if c.split(" ")[0] not in columns.values()]
                if missing:
                    raise SheetError(f"{sheet}: no column for {', '.join(missing)}")
            seen = set()
            for line, row in enumerate(reader, 2):
                if not any((value or "").strip() for value in row.values()):
                    continue
                code = (row.get("code") or "").strip()
                if code not in by_code:
                    raise SheetError(f"{sheet}, row {line}: unknown student code {code!r} (not in {KEY} for this class)")
                if code in seen:
                    raise SheetError(f"{sheet}, row {line}: code {code} appears twice")
                seen.add(code)
                student = scores.setdefault(by_code[code], {})
                for column, name in columns.items():
                    value = _score(row.get(column) or "", f"{sheet}, row {line} ({code}), {column}", items[name][1])
                    question = items[name][0].name
                    student[question] = student.get(question, Fraction(0)) + value
            absent = sorted(c for c, s in by_code.items() if c not in seen)
            if absent:
                raise SheetError(f"{sheet}: {len(absent)} student(s) have no row: {', '.join(absent[:10])}")
    uncovered = [q.name for q in found if q.name not in covered]
    if uncovered:
        raise SheetError(f"no sheet grades {', '.join(uncovered)}: give every written question's sheet")
    return scores


def _order(name: str):
    number = re.search(r"\d+", name)
    return (int(number.group()) if number else 0, name)


def merge(output: Path, sheets: list[Path], zip_path: Path | None = None) -> Path:
    """grades.csv with the written questions' scores of the filled sheets; its path."""
    table, kept = output / "grades.csv", output / AUTOGRADED
    if not table.is_file():
        raise SheetError(f"no {table}: grade the class first (make grade without MANUAL=)")
    if not kept.is_file():
        shutil.copyfile(table, kept)
    with kept.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if zip_path is None:
        zip_path = _zip_of(output)
    found = questions(master_for(zip_path))
    with (output / KEY).open(newline="") as handle:
        key = {row["student"]: row["code"] for row in csv.DictReader(handle)}
    students = [row["student"] for row in rows]
    scores = read_sheets(sheets, found, key, students)
    auto = [c for c in rows[0] if re.fullmatch(r"q\w+", c)] if rows else []
    written = [q.name for q in found]
    columns = sorted(auto + written, key=_order)
    written_possible = sum(q.points for q in found)
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *columns, "autograded", "hand-graded", "total", "possible", "reason", "review"])
        for row in rows:
            hand = scores.get(row["student"], {})
            values = {**{c: row[c] for c in auto}, **{q: f"{float(hand.get(q, 0)):g}" for q in written}}
            autograded, handgraded = float(row["total"]), float(sum(hand.values()))
            writer.writerow([row["student"], *(values[c] for c in columns), f"{autograded:g}", f"{handgraded:g}",
                             f"{autograded + handgraded:g}", f"{float(row['possible']) + float(written_possible):g}",
                             row.get("reason", ""), row.get("review", "")])
    return table


def _zip_of(output: Path) -> Path:
    """The autograder a grades folder was graded with (write() notes it beside the key: its
    path names a variant's secret)."""
    noted = output / NOTED
    if not noted.is_file():
        raise SheetError(f"no {noted}: grade the class first (make grade without MANUAL=)")
    return Path(noted.read_text().strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grades", type=Path, help="the folder of grades.csv (GRADES of make grade)")
    parser.add_argument("sheets", type=Path, nargs="+", help="filled score sheets (manual/<q>-scores.csv)")
    parser.add_argument("--autograder", type=Path, default=None, help="the zip graded with (default: noted by make grade)")
    args = parser.parse_args(argv)
    for sheet in args.sheets:
        if not sheet.is_file():
            parser.error(f"no sheet at {sheet}")
    try:
        table = merge(args.grades, args.sheets, args.autograder)
    except SheetError as error:
        sys.exit(f"manual.py: {error}")
    print(f"merged {len(args.sheets)} sheet(s) into {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
