"""The data-analysis domain: an agent cleaning a dataset and building a churn report."""

from __future__ import annotations

import random

from compactkit.evals.synth import _text as text
from compactkit.evals.synth._domain import Domain, Ending, Update
from compactkit.evals.synth._styles import Run
from compactkit.items import Tool

__all__ = ["Data"]

_COLUMNS = ["customer_id", "name", "region", "segment", "mrr", "seats", "tenure_days", "churned"]

_CONSTRAINTS = (
    "Use the snapshot in data/raw/ only; never query the production warehouse directly.",
    "Exclude test accounts (segment = 'internal') from every figure.",
    "Report amounts in EUR with two decimals.",
    "Do not overwrite anything in data/raw/.",
    "Use pandas and matplotlib only; no seaborn.",
    "Every chart needs a title and labelled axes.",
    "Keep personal data (names, emails) out of the final report.",
)
_LATE = (
    "Please also keep all intermediate files under data/interim/, not in the repo root.",
    "From now on, treat missing MRR as zero, do not drop those rows.",
)
_DECISIONS = (
    (
        "I'll compute churn per cohort month instead of per calendar month, because customers joined mid-month.",
        ("per cohort month",),
    ),
    (
        "Decision: deduplicate on customer_id keeping the latest row, because the export repeats upgraded accounts.",
        ("keeping the latest row",),
    ),
)
_DEAD_ENDS = (
    (
        "I tried reading the file with pyarrow's CSV reader, but it choked on the mixed encodings, so I went back to pandas with encoding='latin-1'.",
        ("pyarrow's CSV reader",),
    ),
)


class Data(Domain):
    """Cleaning a customer export and reporting churn."""

    name = "data"
    late_constraints = _LATE
    decisions = _DECISIONS
    dead_ends = _DEAD_ENDS
    tools = (
        Tool(
            name="run_python",
            description="Run a Python script file and return stdout and stderr.",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        ),
        Tool(
            name="run_sql",
            description="Run a SQL query on the local DuckDB snapshot.",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        ),
    )

    def system(self) -> str:
        return (
            "You are a data analysis agent. The project lives in /home/analyst/churn-2026. "
            "You can read and write files and run Python and SQL. Explain each step briefly, "
            "check intermediate results, and never guess numbers: compute them."
        )

    def opening(self, rng: random.Random) -> tuple[str, list[str]]:
        quarter = rng.choice(("Q1", "Q2", "Q3"))
        goal = f"Build the {quarter} churn report: clean the customer export, compute churn by region and segment, and write a short summary with two charts."
        return goal, rng.sample(_CONSTRAINTS, rng.randint(3, 5))

    def workspace(self, rng: random.Random, scale: float) -> dict[str, str]:
        rows = max(20, int(60 * scale))
        return {
            "data/raw/customers_export.csv": text.csv_table(rng, rows, _COLUMNS),
            "analysis/clean.py": text.code_module(
                rng, max(2, int(4 * scale)), header="Clean the export."
            ),
            "analysis/report.py": text.code_module(
                rng, max(2, int(4 * scale)), header="Build the report."
            ),
            "notes/données_brutes.md": "# Données brutes\n\n" + text.prose(rng, 5) + "\n",
        }

    def new_file(self, rng: random.Random, scale: float) -> tuple[str, str]:
        name = f"{rng.choice(text.WORDS)}_{rng.choice(text.WORDS)}"
        if rng.random() < 0.5:
            return f"analysis/{name}.py", text.code_module(rng, max(2, int(3 * scale)))
        return f"data/interim/{name}.csv", text.csv_table(
            rng, max(10, int(30 * scale)), _COLUMNS[:5]
        )

    def failing_run(self, rng: random.Random, path: str) -> tuple[Run, str]:
        column = rng.choice(("mrr_eur", "tenure_months", "cohort", "plan_tier", "seats_total"))
        n = rng.randint(2, 900)
        kind = rng.randrange(4)
        if kind == 0:
            error = f"KeyError: '{column}_{n}'"
            out = (
                "Traceback (most recent call last):\n"
                f'  File "/home/analyst/churn-2026/{path}", line {rng.randint(5, 120)}, in <module>\n'
                f"    df['{column}_{n}'].sum()\n{error}"
            )
        elif kind == 1:
            error = f"ValueError: could not convert string to float: 'N/A ({n})'"
            out = f'Traceback (most recent call last):\n  File "{path}", line {rng.randint(5, 80)}, in <module>\n{error}'
        elif kind == 2:
            error = f'Binder Error: Referenced column "{column}_{n}" not found in FROM clause!'
            run = Run(
                f'duckdb data/snapshot.duckdb "SELECT {column}_{n} FROM customers"',
                error,
                ("run_sql", {"query": f"SELECT {column}_{n} FROM customers"}),
                True,
            )
            return run, error
        else:
            error = f"pandas.errors.ParserError: Error tokenizing data. C error: Expected 8 fields in line {n}, saw 9"
            out = error
        return Run(f"python {path}", out, ("run_python", {"path": path}), True), error

    def passing_run(self, rng: random.Random, scale: float) -> Run:
        table = text.csv_table(
            rng, max(5, int(25 * scale)), ["region", "segment", "customers", "churned", "rate"]
        )
        return Run(
            "python analysis/report.py", table, ("run_python", {"path": "analysis/report.py"})
        )

    def bulky_run(self, rng: random.Random, lines: int) -> Run:
        if rng.random() < 0.5:
            return Run(
                "head -n 2000 data/raw/customers_export.csv", text.csv_table(rng, lines, _COLUMNS)
            )
        return Run(
            "python -c 'import json; print(open(\"data/raw/events.json\").read())'",
            text.json_records(rng, max(1, lines // 7)),
        )

    def identifier_run(self, rng: random.Random) -> tuple[Run, str, str]:
        if rng.random() < 0.5:
            snap = f"snap_{text.token(rng, 12)}"
            out = f"snapshot: {snap}\ncreated: 2026-11-{rng.randint(2, 27):02d}\nrows: {rng.randint(10000, 99999)}"
            return (
                Run("dvc status --show-json data/raw", out),
                snap,
                "Recording which snapshot we use.",
            )
        run_id = text.uuid(rng)
        out = f"experiment logged\nrun_id: {run_id}\nartifact_uri: mlruns/0/{run_id}/artifacts"
        return Run("python analysis/log_run.py", out), run_id, "Logging this run."

    def recall_run(self, rng: random.Random) -> tuple[Run, str]:
        rate = rng.uniform(1, 9)
        fact = f"overall churn {rate:.2f}%"
        out = f"customers: {rng.randint(4000, 9000)}\nchurned: {rng.randint(100, 700)}\n{fact}"
        return Run(
            "python analysis/report.py --summary",
            out,
            ("run_python", {"path": "analysis/report.py"}),
        ), fact

    def update(self, rng: random.Random, index: int) -> Update:
        if index % 2 == 0:
            old, new = rng.choice((("2026-06-30", "2026-09-30"), ("2026-03-31", "2026-06-30")))
            return Update(
                "cutoff date",
                ("CUTOFF",),
                old,
                new,
                f"Use {old} as the cutoff date.",
                f"Correction: the cutoff date is {new}, not the one I gave earlier.",
                ("analysis/settings.py", f'CUTOFF = "{old}"', f'CUTOFF = "{new}"'),
            )
        old_c, new_c = rng.choice((("0.05", "0.01"), ("0.10", "0.05")))
        return Update(
            "significance level",
            ("ALPHA", "alpha"),
            old_c,
            new_c,
            f"Use a significance level of {old_c}.",
            f"Let's be stricter: significance level {new_c} from now on.",
            ("analysis/settings.py", f"ALPHA = {old_c}", f"ALPHA = {new_c}"),
        )

    def ending(self, rng: random.Random, workspace: dict[str, str]) -> Ending:
        return Ending(
            state="Current state: the cleaned dataset and both charts are done; the summary text is drafted.",
            state_phrases=("both charts are done",),
            next_step="Next step: export the report to reports/churn_report.pdf and share it.",
            next_phrases=("reports/churn_report.pdf",),
            final_user="Great — export it and tell me when it is ready.",
            pending=Run(
                "python analysis/export.py --pdf",
                "",
                ("run_python", {"path": "analysis/export.py"}),
            ),
        )
