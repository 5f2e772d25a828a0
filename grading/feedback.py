"""The feedback of a graded submission, from Otter's results: the scores, what a student may
read (``feedback/``) and what the instructor reads (``details/``), for ``grading/grade.py``.

The feedback agrees with the grade: a question that lost points in a hidden test does not show
Otter's "All test cases passed!" (which speaks of the public tests only) but says that the
public tests passed and a hidden test failed; a question that kept its points beside a failed
public test (one without points of its own) says so.
"""

from __future__ import annotations

PASSED = "All test cases passed!"
HIDDEN = "the public tests passed, a hidden test of this question failed (its details are not shown)"
FAILED = "Test case failed"
KEPT = "the failed public test above carries no points of its own: its message still says what to fix"


def _public_results(summary: str) -> dict[str, str]:
    """Otter's summary of the public tests, split by question (its "qN results:" headers)."""
    found, current = {}, None
    for line in summary.splitlines():
        header = line.split(" results", 1)[0]
        if not line.startswith(" ") and " results" in line and header and " " not in header:
            current = header
        if current is not None:
            found[current] = found.get(current, "") + line + "\n"
    return found


def _first_failure(output: str) -> str:
    """The first assertion message (or error) in a question's output, on one line."""
    lines = [line.strip() for line in output.splitlines()]
    for index, line in enumerate(lines):
        if line.startswith(("AssertionError", "TimeoutError", "NameError", "Exception")) or (
                "Error:" in line and not line.startswith(("File", "Traceback"))):
            return line[:200]
    failed = [line for line in lines if "failed" in line.lower()]
    return (failed or ["no test passed"])[0][:200]


def read_results(grade: Grade, report: dict) -> None:
    """Scores, the safe feedback and the instructor's details, from Otter's results.json."""
    public = {}
    details, feedback = [], []
    for test in report.get("tests", []):
        if test.get("name") == "Public Tests":
            public = _public_results(test.get("output", ""))
    for test in report.get("tests", []):
        output = test.get("output", "")
        if "max_score" in test and test.get("score") is not None:
            name, score, possible = test["name"], float(test["score"]), float(test["max_score"])
            grade.scores[name] = (score, possible)
            head = f"{name}: {score:g} / {possible:g}"
            details += [head] + ["    " + line for line in output.splitlines()] + [""]
            shown = public.get(name, "")
            lost = score < possible and PASSED in shown
            feedback.append(head)
            feedback += ["    " + (line.replace(PASSED, HIDDEN) if lost else line) for line in shown.splitlines()]
            if score == possible and FAILED in shown:  # a public test without points of its own
                feedback.append(f"    {KEPT}")
            feedback.append("")
        elif test.get("name") != "Public Tests":
            section = [test.get("name", "")] + ["    " + line for line in output.splitlines()] + [""]
            details += section
            if test.get("visibility") == "visible":  # the notebook's own errors (sealed grading)
                feedback += section
    grade.details = "\n".join(details)
    grade.feedback = "\n".join(feedback)
    if grade.scores and not any(score for score, _ in grade.scores.values()):
        first = next(test for test in report["tests"] if test.get("name") in grade.scores)
        grade.reason = f"0 on every question; {first['name']}: {_first_failure(first.get('output', ''))}"
