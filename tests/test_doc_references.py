"""The docs name what exists: every repository file a page names is in the repository, every rule has its row.

Pages: `README.md`, `docs/*.md`, `benchmarks/README*.md`. A name counts as a
repository file when it ends like one of the repository's sources (`.md`,
`.py`, `.yaml`, `.smk`, `.sh`, ...); a bare name or a partial path
(`policy/generation.py`) matches a file whose path ends with it. What the
pipeline writes (under `results/`, `data/` outside `data/demo/`, work folders,
and the names of such outputs) is built, not committed, and is not checked here.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess

from tests.workflow_utils import REPO

EXTENSIONS = ("md", "py", "yaml", "yml", "smk", "sh", "lock", "toml", "cff", "sbatch", "j2", "cfg")
PATH = re.compile(r"(?<![\w/.\-{}*<>])((?:[\w.\-]+/)*[\w\-][\w.\-]*\.(?:%s))(?![\w/\-])" % "|".join(EXTENSIONS))
BUILT = ("results/", "data/raw/", "data/interim/", "data/processed/", ".snakemake/", ".dvc/", ".dvc-remote/")
#: Files the pages name that are not the repository's, and why.
ELSEWHERE = {
    "my_preset.yaml": "a user's own preset file, in an example",
    "our_lab.yaml": "a user's own preset file, in an example",
    "gpu_bench.md": "written by benchmarks/gpu/bench_gpu.py on a GPU machine",
    "ruamel.yaml": "the YAML library DVC parses with: a package's name, not a file",
    "dvc.lock": "written by a build's DVC record (`dvc repro`, `python -m reappraisal run`); a user commits it",
}


def doc_pages() -> list[str]:
    pages = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")),
             *sorted(f"benchmarks/{p.name}" for p in (REPO / "benchmarks").glob("README*.md"))]
    return pages


def repo_files() -> set[str]:
    """Committed files and new ones not ignored (what a clone carries once they are committed)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return {line for line in out.splitlines() if (REPO / line).exists()}


def built_names(texts: dict[str, str]) -> set[str]:
    """File names the pages give under a built folder (`results/confirm/preregistration.yaml`): outputs."""
    return {m.group(1).rsplit("/", 1)[-1] for text in texts.values() for m in PATH.finditer(text)
            if m.group(1).startswith(BUILT)}


def _installed(name: str) -> bool:
    """A path inside an installed library (`transformers/models/qwen3/modeling_qwen3.py` in a profile)."""
    top = name.split("/", 1)[0]
    return "/" in name and not (REPO / top).exists() and importlib.util.find_spec(top) is not None


def missing_references(texts: dict[str, str], files: set[str]) -> list[str]:
    """`page: name` for each repository file a page names that no file of ``files`` is."""
    outputs = built_names(texts)
    problems = []
    for page, text in texts.items():
        for m in PATH.finditer(text):
            name = m.group(1)
            if name.startswith(BUILT) or name in outputs or name in ELSEWHERE or _installed(name):
                continue
            here = f"{page.rsplit('/', 1)[0]}/{name}" if "/" in page else name
            if name in files or here in files or any(f.endswith("/" + name) for f in files):
                continue
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{page}:{line}: {name}")
    return problems


def test_every_file_the_docs_name_exists():
    texts = {page: (REPO / page).read_text() for page in doc_pages()}
    assert missing_references(texts, repo_files()) == []


def test_check_refuses_a_page_naming_a_file_that_is_not_there():
    files = repo_files()
    planted = {"docs/summary.md": "A flag never changes a verdict (STATISTICS.md lists the test).\n"
                                  "See `docs/pipeline.md`, `policy/generation.py` and README_reward.md.\n",
               "benchmarks/README.md": "the per-area tables are in `README_grm.md`; `bash benchmarks/gpu/run.sh`;\n"
                                       "`scripts/deploy.sh` and [the card](docs/card.md).\n"}
    assert missing_references(planted, files) == ["docs/summary.md:1: STATISTICS.md",
                                                  "benchmarks/README.md:2: scripts/deploy.sh",
                                                  "benchmarks/README.md:2: docs/card.md"]


def test_the_pipeline_page_has_a_row_for_every_rule():
    rules = {m.group(1) for p in (REPO / "workflow/rules").glob("*.smk")
             for m in re.finditer(r"^rule (\w+):", p.read_text(), flags=re.M)}
    table = [line.split("|")[1] for line in (REPO / "docs/pipeline.md").read_text().splitlines()
             if line.startswith("| ")]
    named = {word for cell in table for word in re.findall(r"\w+", cell)}
    assert sorted(rules - named) == []



COUNTS = re.compile(r"\b\d[\d,]* (?:tests|passed)\b")
TARGET = re.compile(r"(?:suite under|held to|keep the suite under) ~?(\d+) minutes")


def numbers_elsewhere(texts: dict[str, str], home: str = "benchmarks/README.md") -> list[str]:
    """`page:line: text` for each test count stated outside ``home`` (the one place for the suite's
    measurements) and each suite time limit that is not the one ``home`` holds the suite to."""
    target = re.search(r"against the (\d+)-minute target", texts[home]).group(1)
    return [f"{page}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for page, text in texts.items() if page != home
            for m in [*COUNTS.finditer(text), *(m for m in TARGET.finditer(text) if m.group(1) != target)]]


def test_the_suites_counts_and_times_live_in_one_place():
    texts = {page: (REPO / page).read_text() for page in doc_pages()}
    assert numbers_elsewhere(texts) == []
    planted = {"docs/testing.md": "runs everything (1,119 tests; 12 min), held to 15 minutes",
               "docs/CONVENTIONS.md": "keep the suite under ~20 minutes on 2 cores",
               "benchmarks/README.md": "| 1,136 passed | against the 15-minute target"}
    assert numbers_elsewhere(planted) == ["docs/testing.md:1: 1,119 tests",
                                          "docs/CONVENTIONS.md:1: keep the suite under ~20 minutes"]


def test_the_readme_stays_a_two_minute_read():
    """How to use the project fits in 150 lines; detail lives in docs/."""
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= 150, f"README.md has {lines} lines; move detail to docs/"
