"""Compile LaTeX tables the way a paper would: a skeleton article that ``\\input``s them, under pdflatex.

Debian's TeX Live (and poppler's pdftoppm for the page image) are installed
with apt-get when missing, as the browser tests install Chromium.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from reappraisal.summary.render import LATEX_PACKAGES
from tests.apt import install_when_missing

#: Debian packages: pdflatex with booktabs, rotating, pdflscape, longtable, graphicx, amsmath (latex-base
#: and -recommended), siunitx (science); pdftoppm (poppler-utils).
APT_PACKAGES = ("texlive-latex-base", "texlive-latex-recommended", "texlive-science", "poppler-utils")
#: An overfull box wider than this many points is a table that does not fit.
OVERFULL_TOLERANCE_PT = 3.0


def ensure_texlive() -> str:
    """The path of pdflatex, installing TeX Live with apt-get when missing (CI starts on a fresh machine)."""
    install_when_missing(_texlive_present, APT_PACKAGES, recommends=False)
    return shutil.which("pdflatex")


def _texlive_present() -> bool:
    return bool(shutil.which("pdflatex") and shutil.which("pdftoppm") and _has_siunitx())


def _has_siunitx() -> bool:
    return subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True, text=True).stdout.strip() != ""


@dataclass
class Compiled:
    pdf: Path | None
    errors: list[str] = field(default_factory=list)
    overfull: list[str] = field(default_factory=list)
    text_mode_comparisons: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return self.errors + self.overfull + self.text_mode_comparisons


def text_mode_comparisons(tex: str) -> list[str]:
    """Lines with ``<`` or ``>`` outside math (``$...$``): the default font encoding prints them as ¡ and ¿."""
    found = []
    for number, line in enumerate(tex.splitlines(), 1):
        code = line.split("%", 1)[0] if not line.lstrip().startswith("%") else ""
        outside = re.sub(r"\$[^$]*\$", "", code.replace("\\$", ""))
        outside = outside.replace("\\ifdim\\width>\\linewidth", "")  # the one comparison TeX itself evaluates
        if "<" in outside or ">" in outside:
            found.append(f"line {number}: {line.strip()[:120]}")
    return found


def compile_inputs(inputs: list[Path], workdir: Path, *, name: str = "skeleton") -> Compiled:
    """A one-column 10 pt article ``\\input``-ing every file of ``inputs``, compiled twice (longtable widths)."""
    pdflatex = ensure_texlive()
    workdir.mkdir(parents=True, exist_ok=True)
    body = "\n".join(f"\\input{{{Path(p).resolve()}}}\n\\clearpage" for p in inputs)
    (workdir / f"{name}.tex").write_text(
        "\\documentclass[10pt]{article}\n\\usepackage[T1]{fontenc}\n"
        f"\\usepackage{{{','.join(LATEX_PACKAGES)}}}\n\\begin{{document}}\n{body}\n\\end{{document}}\n")
    for _ in range(2):
        proc = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=workdir,
                              capture_output=True, text=True, timeout=300)
    log = (workdir / f"{name}.log").read_text(errors="replace")
    out = Compiled(pdf=workdir / f"{name}.pdf" if proc.returncode == 0 else None)
    out.errors = [line for line in log.splitlines() if line.startswith("!")]
    if proc.returncode != 0 and not out.errors:
        out.errors = [f"pdflatex exited {proc.returncode}"]
    for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log):
        if float(m.group(1)) > OVERFULL_TOLERANCE_PT:
            out.overfull.append(m.group(0))
    for p in inputs:
        out.text_mode_comparisons += [f"{Path(p).name} {hit}" for hit in text_mode_comparisons(Path(p).read_text())]
    return out


def first_page_png(pdf: Path, png: Path) -> Path:
    """The PDF's first page as a PNG (kept beside the report's screenshot)."""
    subprocess.run(["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile", str(pdf),
                    str(png.with_suffix(""))], check=True, capture_output=True, timeout=120)
    return png
