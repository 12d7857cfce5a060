"""The admins' commands: ``poolctl config export | import | validate | preview | provision |
versions | restore N`` and ``poolctl management [on|off]``.

Files are JSON, or YAML when the name ends in ``.yaml``/``.yml`` (that needs PyYAML:
``pip install 'poolctl[yaml]'``). Import saves the draft, then shows what validation says;
``--provision`` publishes it when it is valid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from poolctl.commands import Commands, Output, client_for
from poolctl.errors import InvalidInput, UsageError
from poolctl.models import Issue, Preview, Validation
from poolctl.render import Cell, json_text, local_time, number_cell, printable


def is_yaml(name: str) -> bool:
    return name.lower().endswith((".yaml", ".yml"))


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        raise UsageError("reading and writing YAML needs PyYAML",
                         "pip install 'poolctl[yaml]', or use a .json file") from None
    return yaml


def read_document(name: str) -> Any:
    """The configuration document in file ``name`` (``-``: stdin)."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read {name} ({error.strerror or error})") from None
    try:
        return _yaml().safe_load(text) if is_yaml(name) else json.loads(text)
    except ValueError as error:  # json's error, and PyYAML's YAMLError is not one: caught below
        raise UsageError(f"{name} is not valid JSON ({error})", "fix the file, or name it .yaml for YAML") from None
    except Exception as error:
        raise UsageError(f"{name} is not valid YAML ({str(error).splitlines()[0]})") from None


def write_document(name: str, document: dict[str, Any]) -> None:
    text = (_yaml().safe_dump(document, sort_keys=False, allow_unicode=True) if is_yaml(name)
            else json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    try:
        Path(name).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {name} ({error.strerror or error})") from None


def issues(out: Output, validation: Validation) -> str:
    rows = [[Cell(kind, "31" if kind == "error" else "33"), i.path, i.code, i.message]
            for kind, found in (("error", validation.errors), ("warning", validation.warnings)) for i in found]
    verdict = "the draft is valid" if validation.valid else f"the draft is invalid: {len(validation.errors)} error(s)"
    return (out.table(["", "path", "code", "message"], rows) + "\n" if rows else "") + verdict


def refuse_invalid(validation: Validation) -> None:
    if not validation.valid:
        raise InvalidInput(f"the draft has {len(validation.errors)} error(s); the first: "
                           f"{_issue_line(validation.errors[0]) if validation.errors else '?'}",
                           "fix the file and import it again", [e.to_json() for e in validation.errors])


def _issue_line(issue: Issue) -> str:
    return f"{issue.path}: {issue.message}" if issue.path else issue.message


def cmd_export(args: argparse.Namespace, out: Output) -> int:
    document = client_for(args).config()
    if args.file and args.file != "-":
        write_document(args.file, document)
        out.say(f"exported version {document.get('version')} to {args.file}")
        out.result({"version": document.get("version"), "file": args.file}, lambda: None)
    else:
        out.stdout.write(json_text(document) + "\n")
    return 0


def cmd_import(args: argparse.Namespace, out: Output) -> int:
    client = client_for(args)
    client.save_draft(read_document(args.file))
    validation = client.validate()
    if not args.provision:
        return show_validation(out, validation)
    refuse_invalid(validation)
    version = client.provision(args.comment)
    out.result({"version": version, "validation": validation.to_json()},
               lambda: f"provisioned {args.file} as version {version}")
    return 0


def cmd_validate(args: argparse.Namespace, out: Output) -> int:
    return show_validation(out, client_for(args).validate())


def show_validation(out: Output, validation: Validation) -> int:
    """What validation says of the draft; a usage error (exit 2) when it is invalid."""
    out.result(validation.to_json(), lambda: issues(out, validation))
    refuse_invalid(validation)
    out.hint("poolctl config preview", "poolctl config provision")
    return 0


def preview_text(out: Output, preview: Preview) -> str:
    lines = []
    for outcome in Preview.OUTCOMES:
        for r in getattr(preview, outcome):
            lines.append(f"{outcome:<10} request {r.id} ({r.policy}/{r.profile}{', ' + r.pool if r.pool else ''}): "
                         f"{r.reason}: {r.message}")
    lines += [f"refused    {r.get('kind')} {r.get('name')}: {r.get('message')}" for r in preview.refusals]
    lines = [printable(line) for line in lines]
    rows = [[u["policy"], u["scope"], u["key"], *_figures(u.get("before")), *_figures(u.get("after"))]
            for u in preview.usage if u.get("before") != u.get("after")]
    if rows:
        lines.append(out.table(["policy", "scope", "key", "usage", "reserved", "limit", "usage after",
                                "reserved after", "limit after"], rows))
    return "\n".join(lines) or "provisioning the draft changes no request and no usage"


def _figures(figures: dict[str, Any] | None) -> list[Cell]:
    figures = figures or {}
    return [number_cell(figures.get(name)) for name in ("usage", "reserved", "limit")]


def cmd_preview(args: argparse.Namespace, out: Output) -> int:
    preview = client_for(args).preview()
    out.result(preview.to_json(), lambda: preview_text(out, preview))
    refuse_invalid(Validation(valid=preview.valid, errors=preview.errors))
    out.hint("poolctl config provision")
    return 0


def cmd_provision(args: argparse.Namespace, out: Output) -> int:
    version = client_for(args).provision(args.comment)
    out.result({"version": version}, lambda: f"provisioned the draft as version {version}")
    return 0


def cmd_versions(args: argparse.Namespace, out: Output) -> int:
    versions = client_for(args).versions(limit=args.limit)
    rows = [[number_cell(v.version), v.author or "", local_time(v.created_at), v.comment] for v in versions]
    out.result([v.to_json() for v in versions],
               lambda: out.table(["version", "author", "created", "comment"], rows) if rows else "no versions yet")
    return 0


def cmd_restore(args: argparse.Namespace, out: Output) -> int:
    draft = client_for(args).restore(args.version)
    out.result(draft, lambda: f"copied version {args.version} into the draft")
    out.hint("poolctl config preview", "poolctl config provision --comment 'roll back'")
    return 0


def cmd_management(args: argparse.Namespace, out: Output) -> int:
    wanted = None if args.switch is None else args.switch == "on"
    enabled = client_for(args).management(wanted)
    out.result({"enabled": enabled}, lambda: "resource management is " + (
        "on: the reconciler grants and preempts" if enabled else "off: nothing is granted or preempted (R-30)"))
    return 0


def add_admin_commands(commands: Commands) -> None:
    config = commands.group("config", "the configuration document (admins)")
    config.add("export", cmd_export, "write the provisioned configuration (stdout, or FILE: .json, .yaml)"
               ).add_argument("file", nargs="?")
    load = config.add("import", cmd_import, "save FILE (.json, .yaml; - for stdin) as the draft and validate it")
    load.add_argument("file")
    load.add_argument("--provision", action="store_true", help="then publish it, if valid")
    load.add_argument("--comment", default="", help="the version's comment (with --provision)")
    config.add("validate", cmd_validate, "what provisioning the draft would refuse (exit 2 if invalid)")
    config.add("preview", cmd_preview, "what provisioning the draft would do to current requests")
    config.add("provision", cmd_provision, "publish the draft as the next version").add_argument(
        "--comment", default="", help="the version's comment")
    config.add("versions", cmd_versions, "provisioned versions, newest first").add_argument(
        "--limit", type=int, default=20, help="at most this many (default 20)")
    config.add("restore", cmd_restore, "copy version N into the draft (then provision to roll back)").add_argument(
        "version", type=int, metavar="N")
    commands.add("management", cmd_management, "show or switch resource management (admins)").add_argument(
        "switch", nargs="?", choices=("on", "off"))
