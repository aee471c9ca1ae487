"""The PTF's pace: what folioperf's workflows achieve at their defaults, beside what the PTF's plans' timers allow
as JMeter ran them, measured in one run on this machine.

    python bench/ptf_pace.py [--minutes 10] [--only lotus,orchid,renew,holds,master]

- lotus, orchid, renew, holds: `folioperf run WORKFLOW --users 1 --duration Nm` at the workflow's defaults
  against the built-in sandbox; the requests the user made a minute, beside the plan's: 60 x the calls of an
  iteration / (its pauses as JMeter ran them + the calls' response times), the calls and pauses derived from the
  plan's .jmx (tests/fixtures/jmx) by folioperf.jmx, the response times this run's own, API by API.
- master: `folioperf run scenarios/ptf-master.toml --duration Nm`; each group's samples a minute (calls,
  preflights and script steps, as JMeter counts them), beside the master plan's: its throughput timers and
  pauses simulated as JMeter runs them (folioperf.jmx.samples_per_minute) with the run's response times.

Prints each figure and the ratio achieved / plan's (the issue's goal: within 10 %).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from folioperf import jmx  # noqa: E402
from folioperf.jmeter import AS_RUN  # noqa: E402
from folioperf.results import load  # noqa: E402
from tests.workflows import derived  # noqa: E402

WORKFLOWS = {
    "lotus": ["check-in-check-out", "--ui-release", "lotus"],
    "orchid": ["check-in-check-out", "--ui-release", "orchid"],
    "renew": ["renew"],
    "holds": ["holds"],
}
CICO_MIX = {"check-in": 0.43, "check-out": 0.57}  # DISTRIBUTION=43-57, the stand-alone plans' default
MASTER_MIX = {"check-in": 0.5, "check-out": 0.5}


def run(name: str, args: list[str], minutes: float, work: Path) -> object:
    out = work / name
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "folioperf", "run", *args, "--duration", f"{minutes:g}m",
                           "--results", str(out)], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"folioperf run {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    (found,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    return load(found)


def response_ms(results, prefix: str = ""):
    """The run's average response time of the API a plan's sample is (0 for one it never made)."""
    apis = [e for e in results.entries if e.type not in ("Transaction", "Scheduled", "Script", "Error")]

    def of(sample: jmx.Sample) -> float:
        for e in apis:
            if e.name.startswith(prefix) and derived.api_matches(e.name[len(prefix):], sample) and e.avg is not None:
                return e.avg
        return 0.0

    return of


def calls_per_minute(results, prefix: str = "", scripts: bool = False) -> float:
    """Requests (and with `scripts`, script steps) a minute, over the run's measured time, per user."""
    kinds = [e for e in results.entries if e.name.startswith(prefix) and e.type not in ("Transaction", "Scheduled", "Error")
             and (scripts or e.type != "Script")]
    return sum(e.rps for e in kinds) * 60


def iteration(plan: derived.Derived, respond) -> tuple[float, float]:
    """(calls, seconds) of one pass: its pauses as JMeter ran them and its calls' response times."""
    pauses = jmx.mean_pause_ms(list(plan.events), AS_RUN, plan.variables)
    calls = plan.calls()
    return len(calls), (pauses + sum(respond(s) for s in calls)) / 1000


def plans_pace(name: str, results) -> float:
    respond = response_ms(results)
    if name in ("lotus", "orchid"):
        parts = {page: iteration(derived.cico(name, page), respond) for page in CICO_MIX}
        calls = sum(CICO_MIX[p] * parts[p][0] for p in parts)
        seconds = sum(CICO_MIX[p] * parts[p][1] for p in parts)
    elif name == "renew":
        loans = results.run.options.get("loans_per_user", 10)
        calls, seconds = iteration(derived.renewal(loans), respond)
    else:
        calls, seconds = iteration(derived.hold(results.run.options.get("variant", "patron")), respond)
    return 60 * calls / seconds


def master(results) -> list[tuple[str, float, float]]:
    rows = []
    groups = {g["name"]: g for g in results.run.scenario["groups"]}
    for name, passes, per_minute in (
            ("CICO", lambda rng: derived.cico_iteration(rng.choices(list(MASTER_MIX), list(MASTER_MIX.values()))[0],
                                                         master=True).samples, 65.0),
            ("RENEW", lambda rng: derived.renewal(10, master=True).samples, 6.0)):
        users = groups[name]["users"]
        ours = calls_per_minute(results, f"{name} · ", scripts=True) / users
        theirs = jmx.samples_per_minute(passes, response_ms=response_ms(results, f"{name} · "), per_minute=per_minute,
                                        variables=derived.plan(derived.MASTER).variables, minutes=240)
        rows.append((f"{name} (per thread)", ours, theirs))
    rows.append(("RIH (all threads)", calls_per_minute(results, "RIH · "), 360.0))  # RIH_Throughput, calcMode 4
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--only", default="lotus,orchid,renew,holds,master")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ptf-pace-") as tmp:
        work = Path(tmp)
        for name in args.only.split(","):
            if name == "master":
                results = run(name, ["scenarios/ptf-master.toml"], args.minutes, work)
                done = master(results)
            else:
                results = run(name, [*WORKFLOWS[name], "--users", "1"], args.minutes, work)
                done = [(f"{name} (per user)", calls_per_minute(results), plans_pace(name, results))]
            for label, ours, theirs in done:  # as each run ends: a later failure loses nothing measured
                print(f"{label}: folioperf {ours:.1f}/min, plan as run {theirs:.1f}/min, ratio {ours / theirs:.3f}",
                      file=sys.stderr, flush=True)
            rows += done
    print(f"{'workflow':<22} {'folioperf /min':>15} {'plan as run /min':>17} {'ratio':>7}")
    for label, ours, theirs in rows:
        print(f"{label:<22} {ours:>15.1f} {theirs:>17.1f} {ours / theirs:>7.3f}")


if __name__ == "__main__":
    main()
