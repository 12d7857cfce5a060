"""The mapping file an administrator writes, ``/etc/poolweb/slurm-bridge.toml`` (decision 130):
which partition is which pool, which policy an account uses, which profile a job gets, whether it
may be preempted and how often it is retried. Read once at start; a bad file is a ``MappingError``
naming the file, the line and the key::

    cluster = "clearml"            # in every Idempotency-Key: slurm:clearml:<job id>
    [pools]                        # optional: Slurm partition = Poolweb pool, beside the pools'
    bare-metal = "bare-metal"      # slurm_partition labels in Poolweb (partitions.py, decision 137)
    h100 = "h100"
    [jobs]                         # every job's defaults
    profile = "match"              # the fixed profile whose allotment fits the job, or a profile's name
    dynamic_profile = "job"        # when none fits: this dynamic profile, with the job's own amounts
    preemptible = true
    retries = 3
    partitions = "job"             # "job": only pools of the partitions the job asked for; "any"
    unlisted_accounts = "same-name"  # an account not below uses the policy of its name; "refuse"
    [accounts.ml]                  # per account: policy, profile, preemptible, retries
    policy = "research"
    [bridge]                       # how the bridge process runs (BridgeSettings)
    poll_seconds = 1
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path("/etc/poolweb/slurm-bridge.toml")
MATCH = "match"  # the profile setting that picks the fixed profile whose allotment fits the job
PARTITION_CHOICES = ("job", "any")  # the job's partitions bound its pools; or any pool of its profile
UNLISTED_ACCOUNTS = ("same-name", "refuse")
# What a preempted job may be sent first: a name scancel --signal takes (KILL is the grace's end).
SIGNALS = ("TERM", "INT", "HUP", "USR1", "USR2", "QUIT", "CONT", "URG", "ALRM")
MAX_RETRIES = 10  # Poolweb's bound on max_retries (docs/api.md §3)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")  # Slurm partitions and accounts; Poolweb pools
HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")  # [accounts."ml.team"]
KEY_PART = re.compile(r'"[^"]*"|[^."\s]+')  # a header's parts: quoted, or bare
SETTING = re.compile(r'^\s*("[^"]*"|[A-Za-z0-9_-]+)\s*=')  # key = ...


class MappingError(ValueError):
    """A mapping file that cannot be used, naming the file, the line and the key."""

    def __init__(self, source: str, key: str, line: int | None, message: str):
        self.source, self.key, self.line = source, key, line
        where = f"{source}, line {line}" if line else source
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


@dataclass(frozen=True)
class AccountRules:
    """What an ``[accounts.<name>]`` table overrides; None: the ``[jobs]`` default."""
    policy: str | None = None
    profile: str | None = None
    preemptible: bool | None = None
    retries: int | None = None


@dataclass(frozen=True)
class BridgeSettings:
    """The ``[bridge]`` table: how the bridge process runs."""
    poll_seconds: float = 1.0  # between two looks at Slurm and Poolweb
    lease_seconds: int = 600  # each request's lease: how long the bridge may be away before its jobs' grants end
    preemption_signal: str = "TERM"  # sent to a preempted job's batch script and steps
    grace_seconds: int | None = None  # from that signal to the requeue; None: until Poolweb's grace ends
    comment_seconds: float = 10.0  # a waiting job's comment (place, reason) is rewritten at most this often


@dataclass(frozen=True)
class BridgeMapping:
    source: str  # the file, as the fixes name it
    cluster: str
    pools: dict[str, str]  # Slurm partition → Poolweb pool: the file's [pools], then with the labels (partitions.py)
    profile: str = MATCH
    dynamic_profile: str = ""
    preemptible: bool = True
    retries: int = 3  # like poolctl run
    partitions: str = "job"
    unlisted_accounts: str = "same-name"
    accounts: dict[str, AccountRules] = field(default_factory=dict)
    bridge: BridgeSettings = field(default_factory=BridgeSettings)

    def partition_of(self, pool: str) -> str:
        """The partition a job granted on ``pool`` is pointed at (one per pool: checked on load)."""
        return next(partition for partition, mapped in self.pools.items() if mapped == pool)


# --- the file -----------------------------------------------------------------------------------

def load_mapping(path: Path = DEFAULT_PATH) -> BridgeMapping:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as unreadable:
        raise MappingError(str(path), "", None, f"cannot read it: {unreadable.strerror}") from None
    return parse_mapping(text, str(path))


def parse_mapping(text: str, source: str) -> BridgeMapping:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as bad:
        raise MappingError(source, "", None, f"not TOML: {bad}") from None
    reader = Reader(text, source)
    reader.only(document, (), {"cluster", "pools", "jobs", "accounts", "bridge"})
    jobs = reader.table(document, ("jobs",))
    reader.only(jobs, ("jobs",), {"profile", "dynamic_profile", "preemptible", "retries", "partitions",
                                  "unlisted_accounts"})
    return BridgeMapping(
        source=source, cluster=reader.name(document, ("cluster",), required=True),
        pools=reader.pools(reader.table(document, ("pools",))),
        profile=reader.text(jobs, ("jobs", "profile")) or MATCH,
        dynamic_profile=reader.text(jobs, ("jobs", "dynamic_profile")) or "",
        preemptible=reader.boolean(jobs, ("jobs", "preemptible"), default=True),
        retries=reader.retries(jobs, ("jobs", "retries"), default=3),
        partitions=reader.choice(jobs, ("jobs", "partitions"), PARTITION_CHOICES),
        unlisted_accounts=reader.choice(jobs, ("jobs", "unlisted_accounts"), UNLISTED_ACCOUNTS),
        accounts={account: reader.account(rules, ("accounts", account))
                  for account, rules in reader.table(document, ("accounts",)).items()},
        bridge=reader.settings(reader.table(document, ("bridge",))))


Key = tuple[str, ...]  # a setting's path: ("accounts", "ml", "retries")


def dotted(key: Key) -> str:
    """``accounts.ml.retries``; a part holding a dot quoted, as TOML writes it."""
    return ".".join(f'"{part}"' if "." in part else part for part in key)


class Reader:
    """Reads settings from the parsed TOML; finds a setting's line in the text for its error."""

    def __init__(self, text: str, source: str):
        self.lines = text.splitlines()
        self.source = source

    def fail(self, key: Key, message: str) -> MappingError:
        return MappingError(self.source, dotted(key), self.line_of(key), message)

    def line_of(self, key: Key) -> int | None:
        """The line that sets ``key`` under its table's header, or the header that opens it
        (``[accounts.ml]``); None for a key the text does not spell plainly."""
        table: list[str] = []
        for number, line in enumerate(self.lines, start=1):
            if header := HEADER.match(line):
                table = [unquoted(part) for part in KEY_PART.findall(header.group(1))]
                if tuple(table) == key:
                    return number
            elif (setting := SETTING.match(line)) and (*table, unquoted(setting.group(1))) == key:
                return number
        return None

    def only(self, table: MappingType[str, Any], where: Key, known: set[str]) -> None:
        for name in table:
            if name not in known:
                raise self.fail((*where, name), f"unknown setting; the settings here are {', '.join(sorted(known))}")

    def table(self, document: MappingType[str, Any], key: Key, *, required: bool = False) -> dict[str, Any]:
        value = document.get(key[-1])
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            missing = ", and it is missing" if value is None else ""
            raise self.fail(key, f"expected a table [{dotted(key)}]{missing}")
        return value

    def text(self, table: MappingType[str, Any], key: Key) -> str | None:
        value = table.get(key[-1])
        if value is not None and (not isinstance(value, str) or not value):
            raise self.fail(key, f"expected a name, got {value!r}")
        return value

    def name(self, table: MappingType[str, Any], key: Key, *, required: bool = False) -> str | None:
        value = table.get(key[-1])
        if value is None and required:
            raise self.fail(key, "missing: it is required")
        if value is not None and not (isinstance(value, str) and NAME.match(value)):
            raise self.fail(key, f"expected a name (letters, digits, '_', '.', '-'), got {value!r}")
        return value

    def boolean(self, table: MappingType[str, Any], key: Key, *, default: bool | None) -> bool | None:
        value = table.get(key[-1], default)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def retries(self, table: MappingType[str, Any], key: Key, *, default: int | None) -> int | None:
        value = table.get(key[-1], default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value <= MAX_RETRIES):
            raise self.fail(key, f"expected a whole number from 0 to {MAX_RETRIES}, got {value!r}")
        return value

    def choice(self, table: MappingType[str, Any], key: Key, choices: tuple[str, ...]) -> str:
        value = table.get(key[-1], choices[0])
        if value not in choices:
            raise self.fail(key, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value

    def number(self, table: MappingType[str, Any], key: Key, low: float, high: float, *, default: float | None,
               whole: bool = False) -> Any:
        value = table.get(key[-1], default)
        kinds = int if whole else (int, float)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high):
            kind = "a whole number" if whole else "a number"
            raise self.fail(key, f"expected {kind} from {low:g} to {high:g}, got {value!r}")
        return value

    def settings(self, table: MappingType[str, Any]) -> BridgeSettings:
        key: Key = ("bridge",)
        self.only(table, key, {"poll_seconds", "lease_seconds", "preemption_signal", "grace_seconds",
                               "comment_seconds"})
        defaults = BridgeSettings()
        return BridgeSettings(
            poll_seconds=self.number(table, (*key, "poll_seconds"), 0.1, 60, default=defaults.poll_seconds),
            lease_seconds=self.number(table, (*key, "lease_seconds"), 10, 86400, default=defaults.lease_seconds,
                                      whole=True),
            preemption_signal=self.choice(table, (*key, "preemption_signal"), SIGNALS),
            grace_seconds=self.number(table, (*key, "grace_seconds"), 0, 86400, default=None, whole=True),
            comment_seconds=self.number(table, (*key, "comment_seconds"), 0, 3600, default=defaults.comment_seconds))

    def pools(self, table: MappingType[str, Any]) -> dict[str, str]:
        pools: dict[str, str] = {}
        for partition in table:
            pool = self.name(table, ("pools", partition), required=True)
            if pool in pools.values():
                raise self.fail(("pools", partition), f"pool {pool} is mapped from two partitions; a grant on it "
                                                      "must name one partition")
            pools[partition] = pool
        return pools

    def account(self, rules: Any, key: Key) -> AccountRules:
        if not isinstance(rules, dict):
            raise self.fail(key, f"expected a table [{dotted(key)}] with policy, profile, preemptible or retries")
        self.only(rules, key, {"policy", "profile", "preemptible", "retries"})
        return AccountRules(policy=self.name(rules, (*key, "policy")), profile=self.text(rules, (*key, "profile")),
                            preemptible=self.boolean(rules, (*key, "preemptible"), default=None),
                            retries=self.retries(rules, (*key, "retries"), default=None))


def unquoted(key: str) -> str:
    return key.strip().strip('"')
