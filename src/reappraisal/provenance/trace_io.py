"""The ``trace`` command: what a claim was computed from, all the way up, and what changed since.

``reappraisal trace [CLAIM ...]`` reads the provenance document the summary
wrote beside the claims (``results/summary/provenance.json``), lists for each
claim (all by default) the stages its numbers came through, its raw inputs
(the bundled data or OSF files with their checksums, the claims ledger), the
config values and code files those stages read, with their hashes; then
hashes the same things now, the way DVC does, and says which of them changed
since the claim was computed. ``--changed`` prints one line per claim
(``changed`` or ``unchanged`` and what changed); ``--check`` exits 1 when a
traced claim changed; ``--json`` prints the traces and changes as JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import PipelineInputError
from .claim_trace import changes, claim_trace
from .dvc_state import is_dvc_repository, stage_records

DEFAULT_PROVENANCE = Path("results/summary/provenance.json")


def read_document(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PipelineInputError("no provenance document: run the summary first (results/summary/)",
                                 where=str(path)) from None
    except ValueError as exc:
        raise PipelineInputError(f"not valid JSON ({exc})", where=str(path)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), dict) or not isinstance(doc.get("stages"), dict):
        raise PipelineInputError("not a provenance document (needs 'stages' and 'claims')", where=str(path))
    return doc


def traced_changes(doc: Mapping, root: Path, claim_ids: Sequence[str]) -> dict[str, list[dict]]:
    """Per claim, what differs between its trace and the records hashed now."""
    stages = sorted({s for c in claim_ids for s in doc["claims"][c]})
    current = stage_records(root, stages=stages, without_outs=[doc.get("computing_stage", "")])
    return {c: changes(doc, current, c) for c in claim_ids}


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def describe(trace: Mapping, found: list[dict], claim: Mapping | None, *, verbose: bool) -> str:
    head = f"claim {trace['claim']}"
    if claim:
        head += f": {claim['verdict']} (value {_short(claim['value'], 30)})"
    lines = [head, f"  stages ({len(trace['stages'])}): " + " -> ".join(trace["stages"])]
    raw = trace["raw"] + trace["fetched_files"]
    lines.append(f"  raw inputs ({len(raw)}):")
    for r in trace["raw"]:
        lines.append(f"    {r['path']}  md5 {r['hash']}")
    for f in trace["fetched_files"]:
        digest = f"sha256 {f['sha256']}" if f.get("sha256") else f"md5 {f.get('md5')}"
        lines.append(f"    fetched {f['path']}  {digest}" + (f"  (from {f['source']})" if f.get("source") else ""))
    lines.append(f"  config values: {len(trace['config'])}; code files: {len(trace['code'])}; "
                 f"intermediate artifacts: {len(trace['artifact'])}")
    if verbose:
        lines += [f"    config {c['key']} = {_short(c['value'])}  ({', '.join(c['stages'])})" for c in trace["config"]]
        lines += [f"    code {c['path']}  md5 {c['hash']}" for c in trace["code"]]
        lines += [f"    artifact {a['path']}  md5 {a['hash']}  ({a['stages'][0]})" for a in trace["artifact"]]
    if not found:
        lines.append("  changed since computed: nothing")
    else:
        lines.append(f"  changed since computed ({len(found)}):")
        lines += [f"    {c['kind']} {c['name']}: {_short(c['was'], 40)} -> {_short(c['now'], 40)}"
                  + (f"  ({', '.join(c['stages'])})" if c["stages"] else "") for c in found]
    return "\n".join(lines)


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal trace", description=__doc__.splitlines()[0])
    ap.add_argument("claims", nargs="*", help="claim ids (default: every claim)")
    ap.add_argument("--provenance", type=Path, default=DEFAULT_PROVENANCE)
    ap.add_argument("--claims-file", type=Path, default=None, help="claims.json (default: beside --provenance)")
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root")
    ap.add_argument("--changed", action="store_true", help="one line per claim: changed or unchanged")
    ap.add_argument("--check", action="store_true", help="exit 1 when a traced claim changed")
    ap.add_argument("--verbose", action="store_true", help="list every config value, code file and artifact")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    doc = read_document(a.root / a.provenance)
    unknown = [c for c in a.claims if c not in doc["claims"]]
    if unknown:
        raise PipelineInputError(f"no claim {unknown[0]!r} (claims: {', '.join(sorted(doc['claims']))})",
                                 where=str(a.provenance))
    claim_ids = list(a.claims) or sorted(doc["claims"])
    if not is_dvc_repository(a.root):
        raise PipelineInputError("not a DVC repository: nothing to compare the trace with", where=str(a.root))
    found = traced_changes(doc, a.root, claim_ids)
    claims_path = a.root / (a.claims_file or a.provenance.with_name("claims.json"))
    ledger = {c["id"]: c for c in (json.loads(claims_path.read_text()) if claims_path.is_file() else {}).get("claims", [])}
    if a.json:
        print(json.dumps({c: {"trace": claim_trace(doc, c), "changed": found[c]} for c in claim_ids}, indent=1))
    elif a.changed:
        for c in claim_ids:
            what = sorted({f"{x['kind']} {x['name']}" for x in found[c]})
            print(f"{c}: " + (f"changed ({len(what)}: {', '.join(what[:5])}{', …' if len(what) > 5 else ''})"
                              if what else "unchanged"))
    else:
        print("\n\n".join(describe(claim_trace(doc, c), found[c], ledger.get(c), verbose=a.verbose)
                          for c in claim_ids))
    return 1 if a.check and any(found.values()) else 0
