"""From a Slurm job to a Poolweb request (decision 130): a pure function of the mapping file
(mapping_file.py), Poolweb's live configuration (``GET /api/v1/config``, indexed once per poll
as a ``Catalogue``) and the job.

With ``[pools] bare-metal = "bare-metal"``, ``h100 = "h100"``, ``[accounts.ml] policy =
"research"`` and a fixed profile ``4xgpu`` of 4 GPUs and 32 CPUs that lists ``research``, job 12
(``sbatch -A ml -p h100 --gres=gpu:4 -c 8``, cluster ``clearml``) maps to::

    Submission(job="12", owner="ann", idempotency_key="slurm:clearml:12",
               body={"policy": "research", "profile": "4xgpu", "preemptible": True, "max_retries": 3,
                     "lease_seconds": 600, "name": "train", "labels": {"slurm_cluster": "clearml", "slurm_job": "12", ...}})

and the same job with ``-A web``, an account with no policy, to ``Refusal(job="12", reason=
"account web has no Poolweb policy: ...add [accounts.web] policy = ... to <file>")``: every
refusal names its fix, and the bridge writes it into the job's comment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from poolweb_slurm.mapping_file import MATCH, AccountRules, BridgeMapping
from poolweb_slurm.slurm import Job, printable

NAME_LENGTH = 200  # Poolweb's bound on a request's name (docs/api.md §3)


@dataclass(frozen=True)
class Profile:
    name: str
    resources: dict[str, float]  # the allotment; a dynamic profile's defaults
    dynamic: bool
    pools: tuple[str, ...]  # its connections, preferred first
    policies: tuple[str, ...]


@dataclass(frozen=True)
class Catalogue:
    """What the mapping needs of Poolweb's live configuration, indexed by name."""
    pools: frozenset[str]
    policies: frozenset[str]
    profiles: dict[str, Profile]

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Catalogue:
        profiles = {entry["name"]: Profile(
            name=entry["name"], resources={key: float(value) for key, value in entry.get("resources", {}).items()},
            dynamic=bool(entry.get("dynamic", False)),
            pools=tuple(connection["pool"] for connection in entry.get("connections", [])),
            policies=tuple(entry.get("policies", []))) for entry in document.get("profiles", [])}
        return cls(pools=frozenset(pool["name"] for pool in document.get("pools", [])),
                   policies=frozenset(policy["name"] for policy in document.get("policies", [])),
                   profiles=profiles)


@dataclass(frozen=True)
class Submission:
    """A job as a Poolweb request: ``body`` for ``POST /api/v1/requests``, submitted for ``owner``
    (the job's user) with ``idempotency_key``, so a retry or a restarted bridge finds the same one."""
    job: str
    owner: str
    body: dict[str, Any]
    idempotency_key: str


@dataclass(frozen=True)
class Refusal:
    job: str
    reason: str  # names the fix


class Refused(Exception):
    """Raised inside the mapping by the first rule a job fails; ``map_job`` returns it as a Refusal."""


def map_job(mapping: BridgeMapping, catalogue: Catalogue, job: Job) -> Submission | Refusal:
    try:
        pools = job_pools(mapping, catalogue, job)
        rules = mapping.accounts.get(job.account, AccountRules())
        policy = job_policy(mapping, catalogue, job, rules)
        profile = job_profile(mapping, catalogue, job, rules, policy, pools)
    except Refused as refused:
        return Refusal(job.id, str(refused))
    body: dict[str, Any] = {
        "policy": policy, "profile": profile.name,
        "preemptible": mapping.preemptible if rules.preemptible is None else rules.preemptible,
        "max_retries": mapping.retries if rules.retries is None else rules.retries,
        "lease_seconds": mapping.bridge.lease_seconds,
        "name": printable(job.name, NAME_LENGTH) or f"slurm job {job.id}",
        "labels": {"slurm_cluster": mapping.cluster, "slurm_job": job.id, "slurm_user": job.user,
                   "slurm_account": job.account}}
    if profile.dynamic:
        body["resource_settings"] = resource_settings(job)
    if job.time_limit_seconds is not None:  # Slurm's --time is the request's run limit
        body["max_runtime_seconds"] = job.time_limit_seconds
    return Submission(job=job.id, owner=job.user, body=body, idempotency_key=f"slurm:{mapping.cluster}:{job.id}")


def job_pools(mapping: BridgeMapping, catalogue: Catalogue, job: Job) -> tuple[str, ...]:
    """The pools of the partitions the job asked for, each mapped and live in Poolweb."""
    pools = []
    for partition in job.partitions:
        if partition not in mapping.pools:
            raise Refused(f"partition {partition} maps to no Poolweb pool: add {partition} = \"<pool>\" to [pools] "
                          f"in {mapping.source}")
        pool = mapping.pools[partition]
        if pool not in catalogue.pools:
            raise Refused(f"partition {partition} maps to pool {pool}, which Poolweb's live configuration does not "
                          f"have: provision pool {pool}, or correct [pools] in {mapping.source}")
        pools.append(pool)
    return tuple(pools)


def job_policy(mapping: BridgeMapping, catalogue: Catalogue, job: Job, rules: AccountRules) -> str:
    """The account's policy from ``[accounts.<account>]``, else the policy named like the account."""
    if not job.account:
        raise Refused("the job names no account, and Poolweb chooses the policy by account: sbatch -A <account>")
    listed = job.account in mapping.accounts
    if not listed and mapping.unlisted_accounts == "refuse":
        raise Refused(f"account {job.account} has no Poolweb policy: add [accounts.{job.account}] with "
                      f"policy = \"<policy>\" to {mapping.source}")
    policy = rules.policy or job.account
    if policy not in catalogue.policies:
        fix = f"policy = \"{policy}\" under [accounts.{job.account}] names no Poolweb policy: correct it" if \
            rules.policy else f"add [accounts.{job.account}] with policy = \"<policy>\""
        raise Refused(f"account {job.account} has no Poolweb policy ({fix} in {mapping.source}, or provision a "
                      f"policy {policy})")
    return policy


def job_profile(mapping: BridgeMapping, catalogue: Catalogue, job: Job, rules: AccountRules, policy: str,
                pools: Sequence[str]) -> Profile:
    """The account's or the default profile when named; with ``match``, the fixed profile that
    fits the job (``best_fit``), else the dynamic profile of ``[jobs]``, taking the job's amounts."""
    named = rules.profile or mapping.profile
    if named != MATCH:
        return usable_profile(mapping, catalogue, named, policy, pools)
    fitting = [profile for profile in catalogue.profiles.values()
               if not profile.dynamic and policy in profile.policies and fits(profile, job)
               and not pools_problem(mapping, profile, pools)]
    if fitting:
        return min(fitting, key=best_fit)
    if mapping.dynamic_profile:
        dynamic = usable_profile(mapping, catalogue, mapping.dynamic_profile, policy, pools)
        if not dynamic.dynamic:
            raise Refused(f"dynamic_profile = \"{dynamic.name}\" under [jobs] in {mapping.source} names a fixed "
                          "profile, which cannot take the job's amounts: name a dynamic one")
        return dynamic
    raise Refused(f"no fixed Poolweb profile of policy {policy} on {', '.join(pools)} fits {amounts(job)}: submit "
                  f"with the amounts of one of {', '.join(offered(catalogue, policy)) or 'none'}, or name a "
                  f"dynamic profile in dynamic_profile under [jobs] in {mapping.source}")


def usable_profile(mapping: BridgeMapping, catalogue: Catalogue, name: str, policy: str,
                   pools: Sequence[str]) -> Profile:
    profile = catalogue.profiles.get(name)
    if profile is None:
        raise Refused(f"profile {name} named in {mapping.source} is not in Poolweb's live configuration: correct "
                      "it, or provision it")
    if policy not in profile.policies:
        raise Refused(f"profile {name} does not list policy {policy}: add {policy} to its policies in Poolweb, "
                      f"or name another profile in {mapping.source}")
    if problem := pools_problem(mapping, profile, pools):
        raise Refused(problem)
    return profile


def pools_problem(mapping: BridgeMapping, profile: Profile, pools: Sequence[str]) -> str | None:
    """Why a profile's pools do not suit the job, or None. Every pool Poolweb may grant it on must
    be a partition the bridge can point the job at; with ``partitions = "job"`` (the default), one
    the job asked for, so a job of ``-p h100`` never runs on bare-metal."""
    allowed = set(pools) if mapping.partitions == "job" else set(mapping.pools.values())
    if outside := [pool for pool in profile.pools if pool not in allowed]:
        if mapping.partitions == "job":
            wanted = ",".join(mapping.partition_of(pool) if pool in mapping.pools.values() else pool
                              for pool in profile.pools)
            return (f"profile {profile.name} runs on {', '.join(profile.pools)}, and the job asks for "
                    f"{', '.join(pools)} only: sbatch -p {wanted}, or set partitions = \"any\" under [jobs] in "
                    f"{mapping.source}")
        return (f"profile {profile.name} runs on {', '.join(outside)}, which no partition maps to: add it to "
                f"[pools] in {mapping.source}")
    return None


def fits(profile: Profile, job: Job) -> bool:
    """A fixed profile fits a job of the same GPUs whose CPUs and memory are within its allotment
    (a key the profile does not meter is not compared)."""
    allotment = profile.resources
    return (allotment.get("gpu", 0) == job.gpus
            and job.cpus * 1000 <= allotment.get("mcpu", math.inf)
            and memory_mb(job) <= allotment.get("memory_mb", math.inf))


def best_fit(profile: Profile) -> tuple[float, float, str]:
    """Of the fixed profiles that fit, the one that holds least: 1. fewest CPUs, 2. least memory,
    3. name."""
    return (profile.resources.get("mcpu", math.inf), profile.resources.get("memory_mb", math.inf), profile.name)


def memory_mb(job: Job) -> int:
    """Slurm's MiB in Poolweb's memory_mb (10^6 bytes), rounded up as Poolweb rounds ``memory``."""
    return math.ceil(job.memory_mib * 2**20 / 10**6)


def resource_settings(job: Job) -> dict[str, Any]:
    settings: dict[str, Any] = {"gpu_count": job.gpus, "cpu_count": job.cpus}
    if job.memory_mib:
        settings["memory"] = f"{job.memory_mib}MiB"
    return settings


def amounts(job: Job) -> str:
    memory = f"{job.memory_mib // 1024} GiB" if job.memory_mib % 1024 == 0 else f"{job.memory_mib} MiB"
    return f"{job.gpus} GPU, {job.cpus} CPU" + (f", {memory}" if job.memory_mib else "")


def offered(catalogue: Catalogue, policy: str) -> list[str]:
    """The fixed profiles of a policy as ``4xgpu (4 GPU, 32 CPU)``, for a refusal's fix."""
    return [f"{profile.name} ({allotment(profile.resources)})" for profile in sorted(
        catalogue.profiles.values(), key=lambda profile: profile.name)
        if not profile.dynamic and policy in profile.policies]


def allotment(resources: Mapping[str, float]) -> str:
    parts = [f"{resources.get('gpu', 0):g} GPU"]
    if "mcpu" in resources:
        parts.append(f"{resources['mcpu'] / 1000:g} CPU")
    if "memory_mb" in resources:
        parts.append(f"{resources['memory_mb']:g} MB")
    return ", ".join(parts)


def problems(mapping: BridgeMapping, catalogue: Catalogue) -> list[str]:
    """What the file names that Poolweb's live configuration lacks, for the bridge to log when
    it starts and when the configuration changes; jobs that meet one are refused with it."""
    found = [f"[pools] {partition} = \"{pool}\": Poolweb has no pool {pool}"
             for partition, pool in mapping.pools.items() if pool not in catalogue.pools]
    found += [f"[accounts.{account}] policy = \"{rules.policy}\": Poolweb has no policy {rules.policy}"
              for account, rules in mapping.accounts.items() if rules.policy and rules.policy not in catalogue.policies]
    named = {("jobs", "profile"): mapping.profile, ("jobs", "dynamic_profile"): mapping.dynamic_profile,
             **{(f"accounts.{account}", "profile"): rules.profile for account, rules in mapping.accounts.items()}}
    found += [f"[{table}] {key} = \"{name}\": Poolweb has no profile {name}"
              for (table, key), name in named.items() if name and name != MATCH and name not in catalogue.profiles]
    dynamic = catalogue.profiles.get(mapping.dynamic_profile)
    if dynamic and not dynamic.dynamic:
        found.append(f"[jobs] dynamic_profile = \"{dynamic.name}\": profile {dynamic.name} is fixed, not dynamic")
    return found
