"""Mutation testing of the core modules that check input or compute hashes (``make mutate``).

    python scripts/mutate.py                      # every module in tests/mutation/config.toml
    python scripts/mutate.py --modules log merkle # some of them
    python scripts/mutate.py --list log           # the sampled mutants, without running them
    python scripts/mutate.py --show ID            # one mutant: where it is and what it changes

Why a script of our own rather than mutmut or cosmic-ray: we need a seeded sample per module, each
module's mutants run against that module's own tests (a mapping in one config file), and equivalent
mutants listed once under an id that survives unrelated edits; neither tool does all three without a
wrapper as long as this file. The mutants are the classic ones: a comparison, arithmetic, boolean or
bit operator flipped, an ``if``/``while``/conditional negated, a ``not`` dropped, ``raise`` turned into
``pass``, an integer constant moved by one, ``True``/``False`` swapped, a returned value replaced by
``None``, ``break``/``continue`` swapped. Annotations and docstrings are never mutated.

How a mutant runs: this process imports pytest and the heavy libraries once (never ``acx`` itself),
then forks one child per mutant. The child puts a meta-path finder in front of the import system that
serves the mutated module's compiled tree (same file name, so paths and tracebacks are the real ones),
then runs ``pytest -x`` on the module's test files in-process. A failing test, a collection error or a
timeout kills the mutant; a clean pass means it survived. Hypothesis runs derandomized and without its
example database, so a run is reproducible and leaves nothing behind.

A mutant id is ``<dotted module>:<function qualname>:<8 hex>``, the hex being a hash of the original
source line (stripped), the mutation and its occurrence on that line: moving code or editing another
line keeps it; editing that line makes a new id (and the equivalence must be judged again).

What this does NOT catch: a mutant exercised only by a test that runs the code in a subprocess (the
child's mutant exists in its memory only), and behaviour outside the sampled mutants.

About 800 lines, one script on purpose: a single file the Makefile runs, with no package of its own.
"""

from __future__ import annotations

import argparse
import ast
import glob
import hashlib
import importlib.abc
import importlib.util
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = ROOT / "tests" / "mutation" / "config.toml"

_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Mutant:
    """One mutation of one module: ``index`` is its place in :func:`candidates` order for that source."""

    ident: str
    module: str  # config key ("log")
    dotted: str  # import name ("acx.core.log")
    path: str  # repo-relative file path
    qualname: str
    lineno: int
    operator: str
    line: str
    index: int
    lines: tuple[int, int]  # first and last line of the mutated code
    stmt_line: int  # first line of its statement (always traced when the statement runs)
    in_function: bool  # False: module or class body, run at import time


@dataclass
class _Candidate:
    node: ast.AST
    qualname: str
    operator: str
    apply: Any  # () -> None, mutates the tree in place
    in_function: bool
    stmt_line: int  # first line of the innermost statement holding the mutation


@dataclass
class ModuleConfig:
    name: str
    paths: list[str]
    tests: list[str]
    skip: list[str] = field(default_factory=list)
    sample: int | None = None
    deselect: list[str] = field(default_factory=list)  # pytest node-id prefixes left out of the run


@dataclass
class Config:
    import_root: str
    seed: int
    sample: int
    floor: float
    jobs: int
    min_timeout: float
    timeout_factor: float
    preload: list[str]
    ignore_keywords: list[str]
    hypothesis_max_examples: int
    modules: dict[str, ModuleConfig]
    equivalent_file: Path


def load_config(path: Path) -> Config:
    """Read the one config file: defaults under ``[run]``, one ``[modules.NAME]`` table per module."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    run = data.get("run", {})
    modules = {
        name: ModuleConfig(
            name=name,
            paths=list(spec["paths"]),
            tests=list(spec["tests"]),
            skip=list(spec.get("skip", [])),
            sample=spec.get("sample"),
            deselect=list(spec.get("deselect", [])),
        )
        for name, spec in data.get("modules", {}).items()
    }
    return Config(
        import_root=run.get("import_root", "layers/acx"),
        seed=int(run.get("seed", 19)),
        sample=int(run.get("sample", 60)),
        floor=float(run.get("floor", 0.9)),
        jobs=int(run.get("jobs", 2)),
        min_timeout=float(run.get("min_timeout", 30)),
        timeout_factor=float(run.get("timeout_factor", 3)),
        preload=list(run.get("preload", [])),
        ignore_keywords=list(run.get("ignore_keywords", [])),
        hypothesis_max_examples=int(run.get("hypothesis_max_examples", 0)),
        modules=modules,
        equivalent_file=path.parent / run.get("equivalent", "equivalent.txt"),
    )


def load_equivalents(path: Path) -> dict[str, str]:
    """``id -> reason`` from lines ``<id> <reason>``; ``#`` starts a comment line."""
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ident, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path}: equivalent mutant {ident} needs a one-line reason")
        out[ident] = reason.strip()
    return out


def _expand(patterns: Sequence[str]) -> list[str]:
    """Repo-relative files matching the globs, sorted; a pattern matching nothing yields nothing."""
    found: set[str] = set()
    for pattern in patterns:
        for hit in glob.glob(str(ROOT / pattern), recursive=True):
            if Path(hit).is_file():
                found.add(str(Path(hit).relative_to(ROOT)))
    return sorted(found)


def _dotted(path: str, import_root: str) -> str:
    rel = Path(path).relative_to(import_root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# --- mutant generation -------------------------------------------------------------------------


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and isinstance(parent, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and bool(parent.body)
        and parent.body[0] is node
    )


def _children(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Child nodes in field order (deterministic), minus annotations, which are never mutated."""
    for name, value in ast.iter_fields(node):
        if name in ("annotation", "returns", "type_comment", "type_params"):
            continue
        if isinstance(value, ast.AST):
            yield name, value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    yield name, item


def _replacer(parent: ast.AST, field_name: str, node: ast.AST, new: ast.AST) -> Any:
    """A closure putting ``new`` where ``node`` sits in ``parent`` (a plain or a list field)."""

    def apply() -> None:
        ast.copy_location(new, node)
        value = getattr(parent, field_name)
        if isinstance(value, list):
            value[next(i for i, item in enumerate(value) if item is node)] = new
        else:
            setattr(parent, field_name, new)

    return apply


def all_candidates(tree: ast.Module, ignore_keywords: Sequence[str] = ()) -> list[_Candidate]:
    """Every mutation of ``tree``, in a fixed order (so an index names the same mutant on a re-parse)."""
    out: list[_Candidate] = []

    def visit(
        node: ast.AST, parent: ast.AST | None, scope: str, field_name: str, in_def: bool, line: int
    ) -> None:
        if _is_docstring(node, parent):
            return
        if isinstance(node, ast.keyword) and node.arg in ignore_keywords:
            return
        if isinstance(node, ast.stmt):
            line = node.lineno
        if not scope and isinstance(node, ast.Assign | ast.AnnAssign):
            # a module-level constant or table is named after its target (``<module>.ROUTES``), so a
            # config ``skip`` can name one table and a report says which constant moved
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name):
                scope = f"<module>.{target.id}"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            if not isinstance(node, ast.Lambda):
                scope = f"{scope}.{node.name}" if scope else node.name
            for name, child in _children(node):
                # decorators and defaults run at import time; only the body runs when called
                body = in_def or (name == "body" and not isinstance(node, ast.ClassDef))
                visit(child, node, scope, name, body, line)
            return
        if parent is not None:
            for operator, apply in _mutations(node, parent, field_name):
                out.append(_Candidate(node, scope or "<module>", operator, apply, in_def, line))
        for name, child in _children(node):
            visit(child, node, scope, name, in_def, line)

    visit(tree, None, "", "", False, 0)
    return out


def _set(obj: Any, attr: str, value: Any) -> Any:
    return lambda: setattr(obj, attr, value)


def _mutations(node: ast.AST, parent: ast.AST, field_name: str) -> Iterator[tuple[str, Any]]:
    """(operator name, apply) for each mutation of ``node`` itself."""
    if isinstance(node, ast.BinOp | ast.AugAssign):
        swap = _BINOP_SWAP.get(type(node.op))
        if swap is not None:
            yield f"{type(node.op).__name__}->{swap.__name__}", _set(node, "op", swap())
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swap_c = _CMP_SWAP[type(op)]

            def flip(node: ast.Compare = node, i: int = i, swap_c: type[ast.cmpop] = swap_c) -> None:
                node.ops[i] = swap_c()

            yield f"{type(op).__name__}->{swap_c.__name__}#{i}", flip
    elif isinstance(node, ast.BoolOp):
        other: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield f"{type(node.op).__name__}->{other.__name__}", _set(node, "op", other())
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield f"drop-{type(node.op).__name__}", _replacer(parent, field_name, node, node.operand)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{node.value}->{not node.value}", _set(node, "value", not node.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        yield "const+1", _set(node, "value", node.value + 1)
        yield "const-1", _set(node, "value", node.value - 1)
    elif isinstance(node, ast.Raise):
        yield "raise->pass", _replacer(parent, field_name, node, ast.Pass())
    elif isinstance(node, ast.Break):
        yield "break->continue", _replacer(parent, field_name, node, ast.Continue())
    elif isinstance(node, ast.Continue):
        yield "continue->break", _replacer(parent, field_name, node, ast.Break())
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value in (None, False)):
            yield "return->None", _set(node, "value", ast.Constant(None))

    if isinstance(node, ast.If | ast.While | ast.IfExp):
        negated = ast.UnaryOp(ast.Not(), node.test)
        yield f"negate-{type(node).__name__.lower()}", _set(node, "test", negated)
    elif isinstance(node, ast.comprehension):
        for i, cond in enumerate(node.ifs):

            def neg(node: ast.comprehension = node, i: int = i, cond: ast.expr = cond) -> None:
                node.ifs[i] = ast.UnaryOp(ast.Not(), cond)

            yield f"negate-comprehension-if#{i}", neg


def _span(node: ast.AST) -> tuple[int, int]:
    """Lines a test must execute to reach the mutation: a negated condition's test, else the node."""
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        node = node.test
    start = getattr(node, "lineno", 0)
    return start, getattr(node, "end_lineno", None) or start


def enumerate_mutants(module: str, path: str, cfg: Config) -> list[Mutant]:
    """All mutants of one file, with stable ids."""
    source = (ROOT / path).read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source, filename=path)
    dotted = _dotted(path, cfg.import_root)
    seen: dict[tuple[str, str, str], int] = {}
    out: list[Mutant] = []
    for index, cand in enumerate(all_candidates(tree, cfg.ignore_keywords)):
        lineno = getattr(cand.node, "lineno", 0)
        text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        key = (cand.qualname, text, cand.operator)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        digest = hashlib.sha256(f"{text}|{cand.operator}|{occurrence}".encode()).hexdigest()[:8]
        out.append(
            Mutant(
                ident=f"{dotted}:{cand.qualname}:{digest}",
                module=module,
                dotted=dotted,
                path=path,
                qualname=cand.qualname,
                lineno=lineno,
                operator=cand.operator,
                line=text,
                index=index,
                lines=_span(cand.node),
                stmt_line=cand.stmt_line,
                in_function=cand.in_function,
            )
        )
    return out


def mutated_tree(mutant: Mutant, cfg: Config) -> tuple[ast.Module, ast.AST]:
    """A fresh tree of the mutant's file with the mutation applied, and the mutated node."""
    source = (ROOT / mutant.path).read_text(encoding="utf-8")
    tree = ast.parse(source, filename=mutant.path)
    cand = all_candidates(tree, cfg.ignore_keywords)[mutant.index]
    cand.apply()
    ast.fix_missing_locations(tree)
    return tree, cand.node


def describe(mutant: Mutant, cfg: Config) -> str:
    """``path:line  original  =>  mutated`` (the mutated statement, unparsed) for a report."""
    tree, _ = mutated_tree(mutant, cfg)
    target: ast.AST | None = None
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.stmt) and getattr(stmt, "lineno", -1) == mutant.lineno:
            if not isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.If | ast.While | ast.For | ast.Try):
                target = stmt
                break
            target = target or stmt
    shown = ast.unparse(target).split("\n", 1)[0] if target is not None else mutant.operator
    return f"{mutant.path}:{mutant.lineno}  {mutant.line[:90]}  =>  {shown[:90]}  [{mutant.operator}]"


def select(
    cfg: Config,
    names: Sequence[str],
    equivalents: dict[str, str],
    sample: int | None,
    only: Sequence[str] = (),
) -> dict[str, Any]:
    """Per module: its files, tests, the sampled non-equivalent mutants, the equivalents it holds."""
    plan: dict[str, Any] = {}
    for name in names:
        mod = cfg.modules[name]
        paths = [p for p in _expand(mod.paths) if p.endswith(".py")]
        tests = _expand(mod.tests)
        pool: list[Mutant] = []
        for path in paths:
            pool.extend(enumerate_mutants(name, path, cfg))
        skipped = [m for m in pool if any(_qual_match(m.qualname, pat) for pat in mod.skip)]
        pool = [m for m in pool if m not in skipped]
        equivalent = [m for m in pool if m.ident in equivalents]
        pool = [m for m in pool if m.ident not in equivalents]
        size = mod.sample if sample is None and mod.sample is not None else sample or cfg.sample
        chosen = pool
        if only:  # named mutants (to check that a new test kills them), no sampling
            chosen = [m for m in pool if m.ident in only]
        elif size and len(pool) > size:
            # Shuffle, then take the first `size`, so a larger --sample widens the same draw
            # (random.sample switches algorithm with the sample size: its draws need not nest).
            order = list(pool)
            random.Random(f"{cfg.seed}:{name}").shuffle(order)
            chosen = order[:size]
        chosen.sort(key=lambda m: (m.path, m.lineno, m.index))
        plan[name] = {
            "paths": paths,
            "tests": tests,
            "mutants": chosen,
            "total": len(pool),
            "equivalent": equivalent,
            "skipped": len(skipped),
        }
    return plan


def _qual_match(qualname: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(qualname, pattern)


# --- running -----------------------------------------------------------------------------------


class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module from a compiled mutated tree; everything else imports as usual."""

    def __init__(self, dotted: str, path: Path, code: CodeType) -> None:
        self.dotted, self.path, self.code = dotted, path, code

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.dotted:
            return None
        package = [str(self.path.parent)] if self.path.name == "__init__.py" else None
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=self, submodule_search_locations=package
        )

    def create_module(self, spec: Any) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self.code, module.__dict__)  # noqa: S102 - the mutated tree of our own source file


class _MutateProfile:
    """pytest plugin: after conftest chose its Hypothesis profile, derandomize it and drop the database.

    ``max_examples`` (config ``hypothesis_max_examples``) caps each property test's examples, also
    those a test's own ``@settings`` raised: one 1,500-example property otherwise costs more than the
    rest of its module's tests for every mutant it covers. A cap can only let a mutant survive that
    more examples would have killed, so it lowers a score, never raises it."""

    def __init__(self, max_examples: int = 0) -> None:
        self.max_examples = max_examples

    def pytest_configure(self, config: Any) -> None:
        from hypothesis import settings

        settings.register_profile("mutate", parent=settings.default, derandomize=True, database=None)
        settings.load_profile("mutate")

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        if self.max_examples <= 0:
            return
        from hypothesis import settings

        for item in items:
            test = getattr(item, "obj", None)
            current = getattr(test, "_hypothesis_internal_use_settings", None)
            if current is None or not hasattr(test, "hypothesis"):
                continue
            test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
                current,
                max_examples=min(current.max_examples, self.max_examples),
                derandomize=True,
                database=None,
            )


class _LineTracer:
    """pytest plugin for the baseline run: the lines of the mutated files each test executes.

    coverage.py's C tracer with one dynamic context per test (a Python trace function made the
    Hypothesis-heavy suites ten times slower). Lines run outside any test (imports, collection) are
    filed under ``<import>``: a mutant there runs every test of its module."""

    def __init__(self, files: set[str], out: str) -> None:
        import coverage

        self.files = sorted(os.path.realpath(f) for f in files)
        self.out = out
        self.order: list[str] = []
        self.cov = coverage.Coverage(data_file=None, include=self.files, branch=False, config_file=False)
        self.cov.start()
        self.cov.switch_context("<import>")

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        self.cov.switch_context(item.nodeid)
        self.order.append(item.nodeid)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.cov.switch_context("<import>")

    def pytest_sessionfinish(self, session: Any) -> None:
        self.cov.stop()
        data = self.cov.get_data()
        hits: dict[str, list[list[Any]]] = {}
        for measured in data.measured_files():
            real = os.path.realpath(measured)
            for lineno, contexts in data.contexts_by_lineno(measured).items():
                for context in contexts:
                    hits.setdefault(context or "<import>", []).append([real, lineno])
        Path(self.out).write_text(json.dumps({"order": self.order, "hits": hits}), encoding="utf-8")


def _child(
    mutant: Mutant | None,
    tests: list[str],
    cfg: Config,
    log: str | None,
    trace: tuple[set[str], str] | None,
    deselect: Sequence[str] = (),
) -> None:
    """In the forked child: install the mutant, run the tests, exit with pytest's code."""
    code = 3
    try:
        os.setpgid(0, 0)
        fd = os.open(log or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        if mutant is not None:
            tree, _ = mutated_tree(mutant, cfg)
            compiled = compile(tree, str(ROOT / mutant.path), "exec")
            sys.meta_path.insert(0, _MutantFinder(mutant.dotted, ROOT / mutant.path, compiled))
        import pytest

        plugins: list[Any] = [_MutateProfile(cfg.hypothesis_max_examples)]
        if trace is not None:
            plugins.append(_LineTracer(*trace))
        args = [*tests, "-x", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "--no-header", "-W", "ignore"]
        for prefix in deselect:
            args += ["--deselect", prefix]
        code = int(pytest.main(args, plugins=plugins))
    except BaseException:  # a crash is reported, never falls back into the parent's loop
        import traceback

        traceback.print_exc()
        code = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


@dataclass
class Job:
    module: str
    mutant: Mutant | None  # None: the baseline run of the module's tests
    tests: list[str]  # files or node ids
    timeout: float
    trace: tuple[set[str], str] | None = None
    full: bool = True  # ran every test of the module (a pass is then final)


@dataclass
class Result:
    job: Job
    status: str  # killed | survived | timeout | error | uncovered | baseline-ok | baseline-failed
    exit_code: int
    seconds: float
    cpu: float = 0.0  # the child's user + system CPU seconds (what a quiet machine's budget is made of)

    @property
    def mutant(self) -> Mutant | None:
        return self.job.mutant

    @property
    def module(self) -> str:
        return self.job.module


def _log_path(log_dir: str | None, job: Job) -> str | None:
    if not log_dir:
        return None
    name = job.mutant.ident if job.mutant else f"{job.module}-baseline"
    return str(Path(log_dir) / f"{name.replace(':', '_').replace('<', '').replace('>', '')}.log")


def _run_all(jobs: list[Job], cfg: Config, workers: int, log_dir: str | None) -> list[Result]:
    """Run the jobs, ``workers`` forked children at a time; a child past its timeout is killed."""
    results: list[Result] = []
    running: dict[int, tuple[Job, float]] = {}
    queue = list(jobs)
    try:
        while queue or running:
            while queue and len(running) < workers:
                job = queue.pop(0)
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    _child(
                        job.mutant,
                        job.tests,
                        cfg,
                        _log_path(log_dir, job),
                        job.trace,
                        cfg.modules[job.module].deselect,
                    )
                running[pid] = (job, time.monotonic())
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for cpid, (job, started) in list(running.items()):
                    if now - started > job.timeout:
                        _kill_group(cpid)
                        _, _, usage = os.wait4(cpid, 0)
                        del running[cpid]
                        cpu = usage.ru_utime + usage.ru_stime
                        results.append(Result(job, "timeout", -1, now - started, cpu))
                time.sleep(0.02)
                continue
            if pid not in running:
                continue
            job, started = running.pop(pid)
            _kill_group(pid)  # grandchildren a test left behind
            code = os.waitstatus_to_exitcode(status)
            if job.mutant is None:
                state = "baseline-ok" if code == 0 else "baseline-failed"
            elif code == 0:
                state = "survived"
            elif code in (1, 2):  # a failing test, or a collection/import error caused by the mutant
                state = "killed"
            else:
                state = "error"
            results.append(
                Result(job, state, code, time.monotonic() - started, usage.ru_utime + usage.ru_stime)
            )
            if job.mutant is not None and state == "survived" and job.full:
                print(f"  survived: {job.mutant.ident}", flush=True)  # a cut-short run still says this
            if job.mutant is not None and len(results) % 50 == 0:
                print(f"  ... {len(results)}/{len(jobs)} run", flush=True)
    finally:
        for cpid in running:
            _kill_group(cpid)
    return results


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _preload_pytest_plugins() -> None:
    """Import the installed pytest plugins once here (schemathesis' alone costs ~1 s per child)."""
    from importlib.metadata import entry_points

    for point in entry_points(group="pytest11"):
        try:
            point.load()
        except Exception as exc:  # a plugin that cannot load here fails in the child, visibly
            print(f"note: pytest plugin {point.name} did not preload: {exc}", file=sys.stderr)


def _selected_tests(mutant: Mutant, coverage: dict[str, Any]) -> list[str] | None:
    """Node ids of the tests that execute the mutated lines (in run order); None: run them all."""
    real = os.path.realpath(ROOT / mutant.path)
    first, last = mutant.lines
    if not mutant.in_function:
        return None
    hit_by: dict[str, set[int]] = {}
    for context, lines in coverage["hits"].items():
        hit_by[context] = {n for f, n in lines if f == real}

    def reaches(lines: set[int]) -> bool:
        return mutant.stmt_line in lines or any(first <= n <= last for n in lines)

    if reaches(hit_by.get("<import>", set())):
        return None
    return [t for t in coverage["order"] if reaches(hit_by.get(t, set()))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--modules", nargs="*", help="config module names (default: all)")
    parser.add_argument("--sample", type=int, help="mutants per module (default: the config's)")
    parser.add_argument("--jobs", type=int, help="children at a time (default: the config's)")
    parser.add_argument("--seed", type=int, help="draw another sample (default: the config's seed)")
    parser.add_argument("--list", nargs="*", metavar="MODULE", help="print the sampled mutants and exit")
    parser.add_argument("--show", metavar="ID", help="print one mutant and exit")
    parser.add_argument("--ids", nargs="*", default=[], help="run only these mutants (no sampling)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--logs", help="keep each child's pytest output in this directory")
    parser.add_argument("--no-floor", action="store_true", help="exit 0 even below the floor")
    args = parser.parse_args(argv)

    os.chdir(ROOT)
    cfg = load_config(args.config)
    if args.seed is not None:
        cfg = replace(cfg, seed=args.seed)
    equivalents = load_equivalents(cfg.equivalent_file)
    names = args.modules or (args.list if args.list else None) or list(cfg.modules)
    unknown = [n for n in names if n not in cfg.modules]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; the config lists {sorted(cfg.modules)}")

    if args.show:
        for name in cfg.modules:
            for path in _expand(cfg.modules[name].paths):
                for mutant in enumerate_mutants(name, path, cfg):
                    if mutant.ident == args.show:
                        print(describe(mutant, cfg))
                        print(
                            f"function {mutant.qualname}; equivalent: {equivalents.get(mutant.ident, 'no')}"
                        )
                        return 0
        print(f"no mutant {args.show} in the configured files", file=sys.stderr)
        return 2

    plan = select(cfg, names, equivalents, args.sample, args.ids)
    if args.list is not None:
        for name, entry in plan.items():
            print(f"# {name}: {len(entry['mutants'])} of {entry['total']} mutants; tests {entry['tests']}")
            for mutant in entry["mutants"]:
                print(f"{mutant.ident}  {describe(mutant, cfg)}")
        return 0

    for name in cfg.preload:
        __import__(name)
    _preload_pytest_plugins()
    if args.logs:
        Path(args.logs).mkdir(parents=True, exist_ok=True)
    workers = args.jobs or cfg.jobs
    started = time.time()
    runnable = {n: e for n, e in plan.items() if e["paths"] and e["tests"] and e["mutants"]}
    for name, entry in plan.items():
        if name not in runnable:
            print(f"{name}: nothing to run (files {entry['paths']}, tests {entry['tests']})")

    tmp = Path(tempfile.mkdtemp(prefix="acx-mutate-"))
    try:
        base_jobs = [
            Job(
                n,
                None,
                e["tests"],
                1800.0,
                trace=({str(ROOT / p) for p in e["paths"]}, str(tmp / f"{n}.json")),
            )
            for n, e in runnable.items()
        ]
        base = _run_all(base_jobs, cfg, workers, args.logs)
        coverage: dict[str, Any] = {}
        timeouts: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for res in base:
            cpu[res.module] = res.cpu
            if res.status != "baseline-ok":
                print(f"{res.module}: its tests fail WITHOUT any mutant (exit {res.exit_code}); skipped")
                runnable.pop(res.module, None)
                continue
            coverage[res.module] = json.loads((tmp / f"{res.module}.json").read_text(encoding="utf-8"))
            timeouts[res.module] = max(cfg.min_timeout, cfg.timeout_factor * res.seconds)
            n_tests = len(coverage[res.module]["order"])
            print(
                f"{res.module}: baseline {res.seconds:.1f} s (traced), {n_tests} tests, "
                f"{len(runnable[res.module]['mutants'])} mutants",
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # Pass 1: each mutant against the tests that run its lines. Pass 2: a survivor of a partial run
    # runs again against every test of its module (a lazily built cache or a session fixture may hide
    # the line from the trace), so the verdict is the full suite's.
    results: list[Result] = []
    jobs: list[Job] = []
    for name, entry in runnable.items():
        for mutant in entry["mutants"]:
            chosen = _selected_tests(mutant, coverage[name])
            if chosen is None:
                jobs.append(Job(name, mutant, entry["tests"], timeouts[name]))
            elif not chosen:
                results.append(Result(Job(name, mutant, [], 0.0), "uncovered", 0, 0.0))
            else:
                jobs.append(Job(name, mutant, chosen, timeouts[name], full=False))
    first = _run_all(jobs, cfg, workers, args.logs)
    for res in first:
        cpu[res.module] = cpu.get(res.module, 0.0) + res.cpu
    again = [
        Job(r.module, r.mutant, runnable[r.module]["tests"], timeouts[r.module])
        for r in first
        if r.status == "survived" and not r.job.full
    ]
    results += [r for r in first if not (r.status == "survived" and not r.job.full)]
    if again:
        print(f"  {len(again)} survivors of a partial run: running their module's every test", flush=True)
        second = _run_all(again, cfg, workers, args.logs)
        for res in second:
            cpu[res.module] = cpu.get(res.module, 0.0) + res.cpu
        results += second

    report: dict[str, Any] = {
        "ran_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "modules": {},
    }
    below: list[str] = []
    print()
    print(f"{'module':<12} {'killed':>7} {'of':>4} {'score':>7}  {'equiv.':>6}  {'pool':>5}  {'cpu s':>6}")
    for name, entry in runnable.items():
        mine = [r for r in results if r.module == name]
        killed = [r for r in mine if r.status in ("killed", "timeout")]
        survived = [r for r in mine if r.status in ("survived", "uncovered")]
        errors = [r for r in mine if r.status == "error"]
        counted = len(killed) + len(survived)
        score = len(killed) / counted if counted else 1.0
        if score < cfg.floor:
            below.append(name)
        print(
            f"{name:<12} {len(killed):>7} {counted:>4} {score:>7.1%}  {len(entry['equivalent']):>6}  "
            f"{entry['total']:>5}  {cpu.get(name, 0.0):>6.0f}"
        )
        report["modules"][name] = {
            "killed": len(killed),
            "timeouts": sum(1 for r in mine if r.status == "timeout"),
            "counted": counted,
            "score": round(score, 4),
            "equivalent_listed": len(entry["equivalent"]),
            "pool": entry["total"],
            "cpu_seconds": round(cpu.get(name, 0.0), 1),
            "errors": [asdict(r.mutant) for r in errors if r.mutant],
            "survivors": [asdict(r.mutant) for r in survived if r.mutant],
        }
    any_survivors = False
    for name in runnable:
        mine = [r for r in results if r.module == name and r.status in ("survived", "uncovered", "error")]
        for res in sorted(mine, key=lambda r: r.mutant.lineno if r.mutant else 0):
            if res.mutant is None:
                continue
            if not any_survivors:
                print(
                    "\nsurvivors (a test should fail on each; or list it in the equivalents with a reason):"
                )
                any_survivors = True
            tag = {"survived": "", "uncovered": " (no test runs this line)"}.get(
                res.status, f" (child error, exit {res.exit_code})"
            )
            print(f"  {res.mutant.ident}{tag}\n      {describe(res.mutant, cfg)}")
    elapsed = time.time() - started
    report["seconds"] = round(elapsed, 1)
    total_cpu = sum(cpu.values())
    report["cpu_seconds"] = round(total_cpu, 1)
    report["load_average"] = os.getloadavg()[0]
    print(
        f"\nran {len(results)} mutants in {elapsed:.0f} s with {workers} workers, "
        f"started {report['ran_at']}; "
        f"{total_cpu:.0f} CPU s in the children (a quiet machine with {workers} cores needs about "
        f"{total_cpu / workers:.0f} s), load average {os.getloadavg()[0]:.1f} at the end"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if below:
        print(f"below the {cfg.floor:.0%} floor: {', '.join(below)}")
        return 0 if args.no_floor else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
