"""The mapping from a Slurm job to a Poolweb request (bridge/poolweb_slurm/mapping.py and
mapping_file.py, decision 130): pure tables, no Slurm and no Poolweb."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import pytest

from poolweb_slurm.mapping import Catalogue, Refusal, Submission, map_job, problems
from poolweb_slurm.mapping_file import MappingError, load_mapping, parse_mapping
from poolweb_slurm.slurm import Job
from tests.slurm.examples import FILE, LIVE, MAPPING, job


def submission(policy: str, profile: str, *, job_id: str = "12", account: str = "dev", preemptible: bool = True,
               retries: int = 3, **extra: Any) -> Submission:
    return Submission(job=job_id, owner="ann", idempotency_key=f"slurm:clearml:{job_id}", body={
        "policy": policy, "profile": profile, "preemptible": preemptible, "max_retries": retries, "lease_seconds": 600,
        "name": "train",
        "labels": {"slurm_cluster": "clearml", "slurm_job": job_id, "slurm_user": "ann", "slurm_account": account},
        **extra})


class Case(NamedTuple):
    name: str
    job: Job
    expected: Submission | Refusal
    settings: str = ""  # appended to [jobs]
    live: dict | None = None


def without_policy(name: str) -> dict:
    return {**LIVE, "policies": [policy for policy in LIVE["policies"] if policy["name"] != name]}


CASES = [
    Case("a 4-GPU job of dev gets the fixed 4-GPU profile", job(), submission("dev", "4xgpu")),
    Case("an array task keeps its task id in the key and label", job(id="12_3", array_task=3),
         submission("dev", "4xgpu", job_id="12_3")),
    Case("of two fitting profiles the smaller is chosen", job(account="ml", cpus=4, memory_mib=0),
         submission("research", "4xgpu-small", account="ml", preemptible=False, retries=1)),
    Case("an account's own table names its policy, preemptibility and retries", job(account="ml"),
         submission("research", "4xgpu", account="ml", preemptible=False, retries=1)),
    Case("an unlisted account uses the policy of its name", job(account="research"),
         submission("research", "4xgpu", account="research")),
    Case("a job asking more CPUs than any allotment falls to the dynamic profile with its own amounts",
         job(cpus=64), submission("dev", "job", resource_settings={"gpu_count": 4, "cpu_count": 64,
                                                                    "memory": "16384MiB"}),
         settings='dynamic_profile = "job"'),
    Case("a job without memory gives the dynamic profile no memory", job(gpus=3, memory_mib=0),
         submission("dev", "job", resource_settings={"gpu_count": 3, "cpu_count": 16}),
         settings='dynamic_profile = "job"'),
    Case("a named profile is used whatever the job's amounts", job(gpus=2),
         submission("dev", "4xgpu"), settings='profile = "4xgpu"'),
    Case("a job whose name has control characters is named without them",
         job(name="train\x1b[2J\nnow"), dataclasses.replace(submission("dev", "4xgpu"), body={
             **submission("dev", "4xgpu").body, "name": "train [2J now"})),
    Case("an account with no policy is refused naming the fix", job(account="web"),
         Refusal("12", f"account web has no Poolweb policy (add [accounts.web] with policy = \"<policy>\" in "
                       f"{FILE}, or provision a policy web)")),
    Case("an account whose listed policy is gone is refused naming the line to correct", job(account="ml"),
         Refusal("12", f"account ml has no Poolweb policy (policy = \"research\" under [accounts.ml] names no "
                       f"Poolweb policy: correct it in {FILE}, or provision a policy research)"),
         live=without_policy("research")),
    Case("an unlisted account is refused when the file lists accounts only", job(account="research"),
         Refusal("12", f"account research has no Poolweb policy: add [accounts.research] with policy = "
                       f"\"<policy>\" to {FILE}"), settings='unlisted_accounts = "refuse"'),
    Case("a job without account is refused", job(account=""),
         Refusal("12", "the job names no account, and Poolweb chooses the policy by account: sbatch -A <account>")),
    Case("a partition that maps to no pool is refused", job(partitions=("debug",)),
         Refusal("12", f"partition debug maps to no Poolweb pool: add debug = \"<pool>\" to [pools] in {FILE}")),
    Case("a pool missing from Poolweb is refused", job(partitions=("h100",)),
         Refusal("12", f"partition h100 maps to pool h100, which Poolweb's live configuration does not have: "
                       f"provision pool h100, or correct [pools] in {FILE}"),
         live={**LIVE, "pools": LIVE["pools"][:1]}),
    Case("a job that fits no fixed profile and no dynamic one is refused with the profiles it could use",
         job(gpus=3), Refusal("12", f"no fixed Poolweb profile of policy dev on bare-metal fits 3 GPU, 16 CPU, "
                                    f"16 GiB: submit with the amounts of one of 1xgpu (1 GPU, 8 CPU), 4xgpu "
                                    f"(4 GPU, 32 CPU, 200000 MB), or name a dynamic profile in dynamic_profile "
                                    f"under [jobs] in {FILE}")),
    Case("a named profile the policy may not use is refused", job(account="ml"),
         Refusal("12", f"profile 1xgpu does not list policy research: add research to its policies in Poolweb, "
                       f"or name another profile in {FILE}"), settings='profile = "1xgpu"'),
    Case("a dynamic profile that is fixed is refused naming the setting", job(gpus=3),
         Refusal("12", f"dynamic_profile = \"1xgpu\" under [jobs] in {FILE} names a fixed profile, which cannot "
                       "take the job's amounts: name a dynamic one"), settings='dynamic_profile = "1xgpu"'),
    Case("a named profile Poolweb lacks is refused", job(),
         Refusal("12", f"profile 8xgpu named in {FILE} is not in Poolweb's live configuration: correct it, or "
                       "provision it"), settings='profile = "8xgpu"'),
]

BOUND = [
    Case("with partitions = job, a profile on pools the job did not ask for is not matched", job(gpus=1, cpus=8),
         submission("dev", "1xgpu")),
    Case("with partitions = job, a job of bare-metal only cannot get the 4-GPU profile of both pools", job(),
         Refusal("12", f"no fixed Poolweb profile of policy dev on bare-metal fits 4 GPU, 16 CPU, 16 GiB: submit "
                       f"with the amounts of one of 1xgpu (1 GPU, 8 CPU), 4xgpu (4 GPU, 32 CPU, 200000 MB), or "
                       f"name a dynamic profile in dynamic_profile under [jobs] in {FILE}")),
    Case("with partitions = job, a job asking for both partitions gets it", job(partitions=("bare-metal", "h100")),
         submission("dev", "4xgpu")),
    Case("with partitions = job, a named profile on other pools is refused naming the sbatch that fits", job(),
         Refusal("12", f"profile 4xgpu runs on bare-metal, h100, and the job asks for bare-metal only: sbatch -p "
                       f"bare-metal,h100, or set partitions = \"any\" under [jobs] in {FILE}"),
         settings='profile = "4xgpu"'),
]


def mapping_with(settings: str, base: str = MAPPING):
    return parse_mapping(base.replace("[jobs]\n", f"[jobs]\n{settings}\n"), FILE)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_job_maps_to_a_submission_or_a_refusal_naming_the_fix(case):
    catalogue = Catalogue.from_document(case.live or LIVE)
    assert map_job(mapping_with(case.settings), catalogue, case.job) == case.expected


@pytest.mark.parametrize("case", BOUND, ids=lambda case: case.name)
def test_by_default_the_jobs_partitions_bound_its_pools(case):
    base = MAPPING.replace('partitions = "any"\n', "")
    assert map_job(mapping_with(case.settings, base), Catalogue.from_document(LIVE), case.job) == case.expected


def test_a_minimal_file_takes_the_documented_defaults():
    mapping = parse_mapping('cluster = "c1"\n[pools]\ngpu = "a100"\n', FILE)
    assert (mapping.profile, mapping.dynamic_profile, mapping.preemptible, mapping.retries, mapping.partitions,
            mapping.unlisted_accounts, mapping.accounts) == ("match", "", True, 3, "job", "same-name", {})
    assert mapping.partition_of("a100") == "gpu"


class BadFile(NamedTuple):
    name: str
    text: str
    error: str


BAD_FILES = [
    BadFile("not TOML", 'cluster = "c1"\n[pools\n', f"{FILE}: not TOML: Expected ']' at the end of a table "
                                                     "declaration (at line 2, column 7)"),
    BadFile("no cluster", '[pools]\nh100 = "h100"\n', f"{FILE}: cluster: missing: it is required"),
    BadFile("an empty profile", 'cluster = "c1"\n[pools]\nh100 = "h100"\n[jobs]\nprofile = ""\n',
            f"{FILE}, line 5: jobs.profile: expected a name, got ''"),
    BadFile("no pools", 'cluster = "c1"\n', f"{FILE}: pools: expected a table [pools], and it is missing"),
    BadFile("an unknown setting", 'cluster = "c1"\n[pools]\nh100 = "h100"\n[jobs]\nretry = 2\n',
            f"{FILE}, line 5: jobs.retry: unknown setting; the settings here are dynamic_profile, partitions, "
            "preemptible, profile, retries, unlisted_accounts"),
    BadFile("retries out of range", 'cluster = "c1"\n[pools]\nh100 = "h100"\n[accounts.ml]\npolicy = "research"\n'
            'retries = 11\n', f"{FILE}, line 6: accounts.ml.retries: expected a whole number from 0 to 10, got 11"),
    BadFile("preemptible as text", 'cluster = "c1"\n[pools]\nh100 = "h100"\n\n[accounts."ml"]\npreemptible = "no"\n',
            f"{FILE}, line 6: accounts.ml.preemptible: expected true or false, got 'no'"),
    BadFile("a pool from two partitions", 'cluster = "c1"\n[pools]\nh100 = "h100"\nh100-b = "h100"\n',
            f"{FILE}, line 4: pools.h100-b: pool h100 is mapped from two partitions; a grant on it must name one "
            "partition"),
    BadFile("a bad pool name", 'cluster = "c1"\n[pools]\nh100 = "H 100!"\n',
            f"{FILE}, line 3: pools.h100: expected a name (letters, digits, '_', '.', '-'), got 'H 100!'"),
    BadFile("an unknown choice", 'cluster = "c1"\n[pools]\nh100 = "h100"\n[jobs]\npartitions = "all"\n',
            f"{FILE}, line 5: jobs.partitions: expected one of 'job', 'any', got 'all'"),
    BadFile("an account that is not a table", 'cluster = "c1"\n[pools]\nh100 = "h100"\n[accounts]\nml = "research"\n',
            f"{FILE}, line 5: accounts.ml: expected a table [accounts.ml] with policy, profile, preemptible or "
            "retries"),
]


@pytest.mark.parametrize("case", BAD_FILES, ids=lambda case: case.name)
def test_a_bad_mapping_file_is_refused_naming_the_line_and_key(case):
    with pytest.raises(MappingError) as refused:
        parse_mapping(case.text, FILE)
    assert str(refused.value) == case.error


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(MappingError, match=r"slurm-bridge.toml: cannot read it: No such file or directory"):
        load_mapping(tmp_path / "slurm-bridge.toml")


def test_the_documented_example_is_a_valid_mapping():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "slurm.md").read_text(encoding="utf-8")
    example = text.split("```toml\n", 1)[1].split("```", 1)[0]
    mapping = parse_mapping(example, FILE)
    assert mapping.pools == {"bare-metal": "bare-metal", "h100": "h100"}
    assert map_job(mapping, Catalogue.from_document(LIVE), job(account="research")).body["profile"] == "4xgpu"


def test_names_with_dots_are_read_and_named_whole():
    mapping = parse_mapping('cluster = "c1"\n[pools]\n"gpu.a100" = "a100"\n[accounts."ml.team"]\npolicy = "ml"\n', FILE)
    assert (mapping.pools, mapping.accounts["ml.team"].policy) == ({"gpu.a100": "a100"}, "ml")
    with pytest.raises(MappingError) as refused:
        parse_mapping('cluster = "c1"\n[pools]\nh100 = "h100"\n[accounts."ml.team"]\nretries = -1\n', FILE)
    assert str(refused.value) == f'{FILE}, line 5: accounts."ml.team".retries: expected a whole number from 0 ' \
                                 'to 10, got -1'


def test_the_names_poolweb_lacks_are_listed_for_the_log():
    mapping = parse_mapping('cluster = "c1"\n[pools]\nbare-metal = "bare-metal"\ngpu = "a100"\n[jobs]\n'
                            'profile = "8xgpu"\ndynamic_profile = "1xgpu"\n[accounts.ml]\npolicy = "nlp"\n'
                            'profile = "4xgpu"\n', FILE)
    assert problems(mapping, Catalogue.from_document(LIVE)) == [
        '[pools] gpu = "a100": Poolweb has no pool a100',
        '[accounts.ml] policy = "nlp": Poolweb has no policy nlp',
        '[jobs] profile = "8xgpu": Poolweb has no profile 8xgpu',
        '[jobs] dynamic_profile = "1xgpu": profile 1xgpu is fixed, not dynamic']
    assert problems(parse_mapping(MAPPING, FILE), Catalogue.from_document(LIVE)) == []


def test_a_jobs_time_limit_is_the_requests_run_limit():  # sbatch --time
    catalogue = Catalogue.from_document(LIVE)
    timed = map_job(mapping_with(""), catalogue, job(time_limit_seconds=5400))
    assert timed.body["max_runtime_seconds"] == 5400
    assert "max_runtime_seconds" not in map_job(mapping_with(""), catalogue, job()).body
