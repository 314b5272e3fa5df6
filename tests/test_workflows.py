"""The GitHub workflows: pinned actions, least privilege, CI running exactly .ci/run on x86-64 and arm64."""

import re
from pathlib import Path

import yaml

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"


def load(name):
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def steps(workflow):
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_every_action_is_pinned_to_a_commit():
    for path in WORKFLOWS.glob("*.yml"):
        for step in steps(yaml.safe_load(path.read_text(encoding="utf-8"))):
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), (
                    f"{path.name}: {step['uses']}"
                )


def test_permissions_are_least_privilege():
    ci, publish = load("ci.yml"), load("publish.yml")
    assert ci["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in ci["jobs"].values())
    assert publish["permissions"] == {"contents": "read"}
    assert publish["jobs"]["deploy"]["permissions"] == {
        "pages": "write",
        "id-token": "write",
    }
    assert "permissions" not in publish["jobs"]["build"]


def test_ci_runs_the_readme_command_and_publish_builds_from_main():
    ci, publish = load("ci.yml"), load("publish.yml")
    # PyYAML reads the key `on` as True.
    assert set(ci[True]) == {"push", "pull_request"}
    assert [step["run"] for step in steps(ci) if "run" in step] == ["bash .ci/run"]
    assert publish[True]["push"]["branches"] == ["main"]
    assert [step["run"] for step in steps(publish) if "run" in step] == ["make book"]
    assert (
        (WORKFLOWS.parents[1] / ".ci" / "run")
        .read_text(encoding="utf-8")
        .rstrip()
        .endswith("make test")
    )


def test_ci_runs_on_an_x86_64_and_an_arm64_runner():
    # GitHub's hosted runner labels: ubuntu-24.04 is x86-64, ubuntu-24.04-arm is arm64.
    ci = load("ci.yml")
    (job,) = ci["jobs"].values()
    assert job["runs-on"] == "${{ matrix.runner }}"
    runners = job["strategy"]["matrix"]["runner"]
    assert "ubuntu-24.04" in runners and "ubuntu-24.04-arm" in runners
    # one family failing does not hide the other's result
    assert job["strategy"]["fail-fast"] is False
    # one image for both, which exists for both architectures and where .ci/run can install Chromium
    assert job["container"].startswith("python:3.11-bookworm")
