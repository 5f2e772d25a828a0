"""The rubrics of every written question, taken from the assignment masters, for the book.

A written question is a `manual: true` question of a master (assignments/<a>/<a>.ipynb); its
model answer ends with "**Rubric (P points ...**", a table of criteria and the typical answers
(tests/test_rubrics.py checks that the points add up). `make book` runs this script, which
writes _build/rubrics.md (made from the masters whenever one changes, so it never differs from
them; not committed), and book/assignments/instructors.md includes it. For each assignment:
a table of its written questions with their points and the teaching assistants' minutes to
grade them for a class (MINUTES_PER_POINT, CLASS), then each question's prompt and its rubric.

    .venv/bin/python grading/rubrics.py [--output FILE]
"""

import argparse
import re
import sys
from fractions import Fraction
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "_build" / "rubrics.md"
CLASSES = (120, 200)      # students in the classes the estimate is for
# The hand-grading time is computed from what the masters hold, measured in words, and these
# stated rates (book/assignments/instructors.md, "Hand-grading time"):
READ_WPM = 150            # words per minute, reading technical prose with formulas closely
ITEM_SECONDS = 15         # deciding one rubric item of one answer and typing its score in the sheet
ANSWER_SECONDS = 20       # moving to the next answer, reading its code cell's output, finding its row


def masters(root=ROOT):
    """The masters assignments/<a>/<a>.ipynb, sorted."""
    return sorted(p for p in Path(root).glob("assignments/*/*.ipynb") if p.stem == p.parent.name)


def written_questions(master):
    """[(name, points, title, prompt, rubric, model answer)] of a master's manual questions: the
    prompt is the question's markdown without its heading line, the rubric the model answer's
    cell from "**Rubric" on, the model answer what comes before."""
    cells = nbformat.read(master, as_version=4).cells
    found = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "raw" or not cell.source.startswith("# BEGIN QUESTION") or "manual: true" not in cell.source:
            continue
        name = re.search(r"name: (\w+)", cell.source).group(1)
        points = Fraction(re.search(r"points: ([\d.]+)", cell.source).group(1))
        end = next(j for j in range(i + 1, len(cells)) if cells[j].source.startswith("# END QUESTION"))
        texts = [c.source for c in cells[i:end] if c.cell_type == "markdown"]
        heading, _, prompt = texts[0].partition("\n")
        answer = next(t for t in texts if "**Rubric (" in t)
        title = re.sub(r"^#+\s*", "", heading)
        found.append((name, points, title, prompt.strip(), answer[answer.index("**Rubric ("):].strip(),
                      answer[:answer.index("**Rubric (")].strip()))
    return found


def rubric_items(rubric):
    """[(criterion, points)] of a rubric's table (its first table): the last column's points, or
    one point per row where the rubric gives "one per sub-question" (the first two columns then
    name the item)."""
    rows = []
    for line in rubric[rubric.index("|"):].splitlines() if "|" in rubric else []:
        if not line.startswith("|"):
            break
        if not set(line) <= set("|-: "):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    rows = rows[1:]  # the header
    if rows and all(re.fullmatch(r"[\d½/]+", row[-1]) for row in rows):
        return [(row[0], Fraction(row[-1].replace("½", "1/2"))) for row in rows]
    return [(f"{row[0]}: {row[1]}", Fraction(1)) for row in rows]


def words(text):
    """The words of a text (formulas count by their pieces: $\\sum_i$ is one, $p - k$ three)."""
    return len(re.findall(r"[A-Za-z0-9_\\]+", text))


def calibration(rubric):
    """[(label, points, text)] of a rubric's calibration set: its "- *Label, P points.* text" items."""
    part = rubric.split("**Calibration set**", 1)[-1] if "**Calibration set**" in rubric else ""
    found = re.findall(r"^- \*([^,*]+), ([\d½]+)(?: points?)?\.\* (.*?)(?=^- \*|^\*\*|\Z)", part, re.M | re.S)
    return [(label, Fraction(p.replace("½", "") or 0) + Fraction(1, 2) * ("½" in p), " ".join(text.split()))
            for label, p, text in found]


def minutes(rubric, model=""):
    """(words of an answer, minutes per answer, minutes once per grader) of a written question:
    an answer is as long as the mean of a sample, its calibration answers and its model answer,
    read at READ_WPM, plus ITEM_SECONDS per rubric item and ANSWER_SECONDS; once, the rubric with
    its calibration set (and the model answer it follows) read at READ_WPM."""
    sample = [words(text) for *_, text in calibration(rubric)] + ([words(model)] if model else [])
    sample = sample or [0]
    length = sum(sample) / len(sample)
    per_answer = length / READ_WPM + (len(rubric_items(rubric)) * ITEM_SECONDS + ANSWER_SECONDS) / 60
    return length, per_answer, words(rubric) / READ_WPM


def _points(value):
    return f"{float(value):g}"


def page(root=ROOT):
    """The markdown of every written question's rubric, assignment by assignment."""
    lines = ["<!-- Written by grading/rubrics.py from the masters at every `make book`: edit the masters. -->", ""]
    rows = []
    sections = []
    for master in masters(root):
        questions = written_questions(master)
        points = sum(q[1] for q in questions)
        timed = [minutes(rubric, model) for *_, rubric, model in questions]
        length, per_answer, once = (sum(t[i] for t in timed) for i in range(3))
        rows.append(f"| {{doc}}`{master.stem}` | {', '.join(q for q, *_ in questions) or 'none'} | "
                    f"{_points(points)} | {length:.0f} | {per_answer:.1f} | " + " | ".join(
                        f"{(n * per_answer + once) / 60:.1f} h" for n in CLASSES) + " |")
        for name, value, title, prompt, rubric, _ in questions:
            sections += [f"### {master.stem} {name}: {title.split(': ', 1)[-1]}", "", prompt, "", rubric, ""]
    lines += ["| Assignment | Written questions | Written points | Words of an answer | Minutes per "
              "submission | " + " | ".join(f"A class of {n}" for n in CLASSES) + " |",
              "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in CLASSES) + " |", *rows, "",
              f"(Read at {READ_WPM} words a minute, {ITEM_SECONDS} s per rubric item, {ANSWER_SECONDS} s "
              "per answer, and each question's rubric read once; computed by grading/rubrics.py.)", ""]
    return "\n".join(lines + sections).rstrip() + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = page()
    if not args.output.exists() or args.output.read_text() != text:
        args.output.write_text(text)
        print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
