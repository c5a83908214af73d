"""The timing evidence of the Fashion-MNIST study's "changes after registration".

Python 3 standard library only. Run from the repository root:

    python3 results/fmnist/timing.py

It prints markdown, from the committed run records (results/fmnist/<table>/runs/<run>/) and
the git history:

1. For each study table (cfa, wat, homing, tian-cfa-scaling, tian, bat), a table with a row per
   group of runs (the run id without its seed and hash) and a row for the whole table: runs,
   first start, last session start, last finish lower bound (UTC) and the distinct git_sha
   values (7 characters) of all the sessions.
2. For each commit of the changes after registration (listed below in COMMITS), its committer
   time (`git log -1 --format=%ct`) and, for each study table, how many of its runs had
   started and how many had finished (finish lower bound before the commit time) by then.
3. For abd9ee5 (C17 encoded in claims.toml), the homing runs that had started before it, with
   their start, finish lower bound and whether that bound lies before the commit.

The finish lower bound. The records hold no finish timestamps. env.json lists the sessions
that trained a run (`started_unix_seconds`, `start_epoch`, `git_sha`); metrics.jsonl has one
line per epoch with `seconds`, the wall seconds of that epoch in the session that trained it.
A run's finish lower bound is its last session's start plus the `seconds` of the epochs that
session trained (epoch >= its start_epoch; where an epoch appears twice, the last line wins).
The run finished after that bound: the final reports come after the last epoch (in the homing
sweep, a run's bound lies 37-47 s before the start of the run that took its slot: final reports
and start-up together), so a bound only a few seconds before a commit does not prove the run
had finished; section 3 prints the margin.

A run "had started" at a commit when its first session started before the commit time.
Where there is no git history (no .git, no git, or an unknown commit) the output says so for
that commit.
"""

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STUDY = os.path.join(ROOT, "results", "fmnist")
TABLES = ["cfa", "wat", "homing", "tian-cfa-scaling", "tian", "bat"]
COMMITS = [
    ("69df75a", "registration (the ledger and sweeps)"),
    ("5916b48", "claims.toml and the decision code"),
    ("7815e88", 'WAT preset: normalization = "code", loss_scale = "as-written"'),
    ("8a6fce1", "claims on absent groups not compared, pairs on common seeds"),
    ("da02ec9", 'C3 "not decided" rule'),
    ("abd9ee5", "C17 encoded in claims.toml"),
    ("dcfa3b5", "C15/C16 baseline and the class-wise β preset"),
    ("6d56bed", "fmnist-tian-trades restated"),
]
C17_COMMIT = "abd9ee5"


# ------------------------------------------------------------------------------------ records

def utc(seconds):
    """A unix time as 'YYYY-MM-DD HH:MM:SS' (UTC)."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def read_metrics(path):
    """The last metrics line of each epoch, by epoch."""
    by_epoch = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                by_epoch[row["epoch"]] = row
    return by_epoch


def finish_lower_bound(sessions, by_epoch):
    """The last session's start plus the seconds of the epochs it trained."""
    last = sessions[-1]
    trained = [r["seconds"] for e, r in by_epoch.items() if e >= last["start_epoch"]]
    return last["started_unix_seconds"] + sum(trained)


def group_of(run_id):
    """The run id without its seed and hash: '...-s0-bf4813a9eb' -> '...'."""
    return re.sub(r"-s\d+-[0-9a-f]+$", "", run_id)


def load_run(run_dir):
    with open(os.path.join(run_dir, "env.json")) as f:
        sessions = json.load(f)["sessions"]
    by_epoch = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    run_id = os.path.basename(run_dir)
    return {
        "id": run_id,
        "group": group_of(run_id),
        "start": sessions[0]["started_unix_seconds"],
        "last_session": sessions[-1]["started_unix_seconds"],
        "bound": finish_lower_bound(sessions, by_epoch),
        "shas": {s["git_sha"][:7] for s in sessions},
    }


def load_table(table):
    runs_dir = os.path.join(STUDY, table, "runs")
    return [load_run(os.path.join(runs_dir, name)) for name in sorted(os.listdir(runs_dir))]


# ------------------------------------------------------------------------------------ git

def commit_time(sha):
    """The committer time of `sha`, or (None, why not)."""
    if not os.path.exists(os.path.join(ROOT, ".git")):
        return None, "no git history here (no .git)"
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%ct", sha], cwd=ROOT,
                             capture_output=True, text=True)
    except OSError as e:
        return None, f"git could not be run ({e.strerror})"
    if out.returncode != 0 or not out.stdout.strip():
        return None, "commit not in this repository's history"
    return int(out.stdout.strip()), None


# ------------------------------------------------------------------------------------ markdown

def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def summary_row(name, runs):
    return [name, len(runs), utc(min(r["start"] for r in runs)),
            utc(max(r["last_session"] for r in runs)), utc(max(r["bound"] for r in runs)),
            ", ".join(sorted(set().union(*(r["shas"] for r in runs))))]


def print_tables(tables):
    print("## 1. The study tables' runs\n")
    header = ["group", "runs", "first start (UTC)", "last session start (UTC)",
              "last finish lower bound (UTC)", "git_sha"]
    for table, runs in tables.items():
        groups = sorted({r["group"] for r in runs}, key=lambda g: min(
            r["start"] for r in runs if r["group"] == g))
        rows = [summary_row(g, [r for r in runs if r["group"] == g]) for g in groups]
        rows.append(summary_row(f"**all of {table}**", runs))
        print(f"### {table}\n\n{md_table(header, rows)}\n")


def progress(runs, t):
    started = sum(r["start"] < t for r in runs)
    finished = sum(r["bound"] < t for r in runs)
    return f"started {started}/{len(runs)}, finished {finished}/{len(runs)}"


def print_commits(tables, times):
    print("## 2. The runs at each change after registration\n")
    print("started: first session before the commit; finished: finish lower bound before it.\n")
    header = ["commit", "change", "time (UTC)"] + list(tables)
    rows = []
    for sha, what in COMMITS:
        t, why = times[sha]
        if t is None:
            rows.append([sha, what, why] + ["-"] * len(tables))
        else:
            rows.append([sha, what, utc(t)] + [progress(runs, t) for runs in tables.values()])
    print(md_table(header, rows) + "\n")


def print_c17(homing, times):
    t, why = times[C17_COMMIT]
    print(f"## 3. The homing runs started before {C17_COMMIT} (C17 encoded)\n")
    if t is None:
        print(f"{C17_COMMIT}: {why}; not computed.")
        return
    started = sorted((r for r in homing if r["start"] < t), key=lambda r: r["start"])
    print(f"{C17_COMMIT} committed {utc(t)} UTC; {len(started)} of {len(homing)} homing runs "
          "had started.\n")
    header = ["run", "start (UTC)", "finish lower bound (UTC)", "commit - bound (s)",
              "finished by then"]
    rows = [[r["id"], utc(r["start"]), utc(r["bound"]), f"{t - r['bound']:.0f}",
             "yes" if r["bound"] < t else "no"] for r in started]
    print(md_table(header, rows))


def main():
    tables = {t: load_table(t) for t in TABLES}
    times = {sha: commit_time(sha) for sha, _ in COMMITS}
    print("# Fashion-MNIST study: the timing of the changes after registration\n")
    print_tables(tables)
    print_commits(tables, times)
    print_c17(tables["homing"], times)
    return 0


if __name__ == "__main__":
    sys.exit(main())
