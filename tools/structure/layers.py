#!/usr/bin/env python3
"""The trainer's layers: which of its modules may not import which.

Each rule names a module of `trainer/src` and the modules it must never import (a file of the
first naming an item of a file of the second, as `circles.py` reads imports: `use` trees and
inline paths, through `pub use` re-exports). The chief rule: evaluation takes a model and a
data set and never reaches into a run (a run is one `ModelSource`, `trainer/src/run/source.rs`);
the run calls evaluation, never the reverse.

Usage: python3 tools/structure/layers.py [--self-test]
Exits 1 and names every import that breaks a rule. `--self-test` first checks, on a small tree it
writes, that a forbidden import is found (so the check can fail).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import circles  # noqa: E402

TRAINER = os.path.join(circles.ROOT, 'trainer', 'src')

# (module, modules it must not import, why)
RULES = [
    ('eval', ['run', 'train', 'sweep', 'bench'],
     'evaluation takes a model and a data set; a run is one ModelSource (run/source.rs)'),
    ('train', ['run', 'eval', 'sweep', 'bench'],
     'a training step knows nothing of runs, evaluation or sweeps'),
    ('attack', ['run', 'eval', 'train', 'sweep', 'bench'], 'attacks are building blocks'),
    ('model', ['run', 'eval', 'train', 'sweep', 'bench'], 'models are building blocks'),
    ('data', ['run', 'eval', 'train', 'sweep', 'bench'], 'data sets are building blocks'),
    ('loss', ['run', 'eval', 'train', 'sweep', 'bench'], 'losses are building blocks'),
]


def top(src, path):
    """The top-level module of a file of `src` (`eval` for `eval/job/mod.rs`)."""
    first = os.path.relpath(path, src).split(os.sep)[0]
    return first[:-3] if first.endswith('.rs') else first


def violations(src, rules):
    edges = circles.graph(src)
    found = []
    for f, targets in sorted(edges.items()):
        for t in sorted(targets):
            for module, forbidden, why in rules:
                if top(src, f) == module and top(src, t) in forbidden:
                    found.append(f'{os.path.relpath(f, circles.ROOT)} imports '
                                 f'{os.path.relpath(t, src)}: {module} -> {top(src, t)} ({why})')
    return found


def self_test():
    """A tree whose `eval` imports `run` must give exactly one violation."""
    with tempfile.TemporaryDirectory() as src:
        files = {
            'lib.rs': 'pub mod eval;\npub mod run;\n',
            'eval/mod.rs': 'use crate::run::RunDir;\n',
            'run/mod.rs': 'pub struct RunDir;\nuse crate::eval;\n',
        }
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(src, name)), exist_ok=True)
            with open(os.path.join(src, name), 'w', encoding='utf-8') as out:
                out.write(text)
        found = violations(src, RULES[:1])
        if len(found) != 1 or 'eval -> run' not in found[0]:
            sys.exit(f'layers.py self-test: expected one eval -> run import, found {found}')


def main():
    if '--self-test' in sys.argv[1:]:
        self_test()
    found = violations(TRAINER, RULES)
    for line in found:
        print(line)
    print(f'{len(found)} forbidden import(s) among the trainer\'s layers')
    sys.exit(1 if found else 0)


if __name__ == '__main__':
    main()
