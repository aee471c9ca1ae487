"""Dataset specs: the built-ins load, scale and stay apart; bad files are one clear line; records are
deterministic and in FOLIO's shapes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from folioperf.seed import dataset, generate, vocabulary
from folioperf.seed.dataset import DatasetError

from .conftest import run_process

FOLIO_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$")
BUILTINS = ["bls", "cico", "holds", "iro", "pro", "renewals", "rih", "var"]
KINDS = ["user", "item", "instance", "holdings", "loan", "request", "srs_record"]


def test_builtin_datasets_load_with_distinct_prefixes_and_ids():
    assert dataset.builtin_names() == BUILTINS
    loaded = [dataset.load(name) for name in BUILTINS]
    assert len({d.prefix for d in loaded}) == len(loaded)
    barcodes = {d.ids.item_barcode(0) for d in loaded} | {d.ids.user_barcode(0) for d in loaded}
    assert len(barcodes) == 2 * len(loaded)
    prefixes = [d.ids.of(kind).prefix for d in loaded for kind in KINDS]
    assert len(set(prefixes)) == len(prefixes)
    for d in loaded:
        for kind in KINDS:
            assert FOLIO_UUID.match(d.ids.of(kind)(0)) and FOLIO_UUID.match(d.ids.of(kind)(10**9))


def test_scale_multiplies_counts_but_keeps_loans_per_user():
    renewals = dataset.load("renewals")
    c = renewals.scaled(0.1)
    assert c.loans_per_user == (10, 50, 100, 200)
    assert (c.users, c.instances, c.users_per_loan_count) == (5, 400, 1)
    assert c.loans == 360 and c.borrowers == 4
    big = renewals.scaled(10)
    assert (big.instances, big.users_per_loan_count, big.loans) == (40_000, 100, 36_000)


def test_a_scale_with_too_few_items_for_the_loans_is_refused():
    with pytest.raises(DatasetError) as info:
        dataset.load("renewals").scaled(0.01)
    message = str(info.value)
    assert message.endswith("raise --scale or counts.instances")
    assert "renewals.toml: counts.instances: at scale 0.01 the 360 loans need 360 items but the dataset has 40" in message


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


BASE = Path(dataset.locate("cico")).read_text()


@pytest.mark.parametrize("change, key, reason", [
    (("users = 5000", "users = 5000\nuser = 3"), "counts.user", "unknown key (expected one of: authorities, holdings_per_instance,"),
    (("users = 5000", "users = -5"), "counts.users", "-5 is less than the minimum of 0"),
    (("prefix = \"cico\"", "prefix = \"CICO-1\""), "dataset.prefix", "'CICO-1' must be 2-8 lower-case letters and digits"),
    (("loan_type = \"Can circulate\"", "loan_type = \"Can circulat\""), "records.loan_type",
     "'Can circulat' is not in reference.loan_types (known: 'Can circulate', 'Course reserves'"),
    (("locale = \"en_US\"", "locale = \"xx_XX\""), "dataset.locale", "'xx_XX' is not a Faker locale"),
    (("[records]", "[records]\nlocations = \"Main Library\""), "", "invalid TOML"),
    (("instances = 25000", "instances = \"many\""), "counts.instances", "'many' is not of type 'integer'"),
    (("pickup_service_points = [\"Circ Desk 1\"]", "pickup_service_points = [\"Online\"]"), "records.pickup_service_points",
     "'Online' is not a pickup location"),
    (("loans = \"overdue\"", "loans = \"late\""), "dataset.loans", "'late' is not one of ['overdue', 'current']"),
])
def test_a_bad_dataset_file_is_one_line_naming_file_key_and_reason(tmp_path, change, key, reason):
    path = _write(tmp_path, "mine", BASE.replace(*change, 1))
    r = run_process("seed", str(path), "--db", "postgresql://postgres@127.0.0.1:1/none")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    expected = f"folioperf: error: {path}: " + (f"{key}: " if key else "")
    assert lines[0].startswith(expected) and reason in lines[0], lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_a_bad_reference_record_in_a_dataset_is_named(tmp_path):
    path = _write(tmp_path, "mine", BASE + '\n[[reference.loan_types]]\nid = "not-a-uuid"\nname = "Short loan"\n')
    with pytest.raises(DatasetError, match=r"mine.toml: reference.loan_types\[0\].id: 'not-a-uuid' is not a FOLIO uuid"):
        dataset.load(str(path))
    path = _write(tmp_path, "dup",
                  BASE + '\n[[reference.loan_types]]\nid = "2b94c631-fca9-4892-a730-03ee529ffe28"\nname = "Can circulate"\n')
    with pytest.raises(DatasetError, match=r"reference.loan_types\[0\].name: 'Can circulate' is defined twice"):
        dataset.load(str(path))


def test_unknown_dataset_lists_the_builtins():
    r = run_process("seed", "nosuch")
    assert r.returncode == 2
    assert r.stderr.strip() == ("folioperf: error: unknown dataset 'nosuch': built-in datasets are bls, cico, holds, iro, pro, "
                                "renewals, rih, var (or pass a path to a .toml file)")


def _generate(name: str, scale: float, now: str = "2026-03-02T10:00:00.000+00:00") -> dict[str, list[str]]:
    ds = dataset.load(name)
    counts = ds.scaled(scale)
    tables = (("users", ("id", "jsonb")), ("instance", ("id", "jsonb")), ("holdings_record", ("id", "jsonb")),
              ("item", ("id", "jsonb")), ("raw_records_lb", ("id", "content")), ("marc_records_lb", ("id", "content")),
              ("loan", ("id", "jsonb")), ("request", ("id", "jsonb")))
    job = generate.Job(ds, counts, tables, now)
    out: dict[str, list[str]] = {}
    for msg in generate.messages(job):
        if msg[0] == "rows":
            out.setdefault(msg[1], []).extend(msg[3].decode().split("\n")[:-1])
    return out


def _records(lines: list[str]) -> list[dict]:
    return [json.loads(line.split("\t")[1].replace("\\\\", "\\")) for line in lines]


def test_generation_is_deterministic_for_a_seed():
    first, second = _generate("holds", 0.01), _generate("holds", 0.01)
    assert first == second
    other = _generate("cico", 0.01)
    assert not set(first["item"]) & set(other["item"])


def _loan_dates(rows: dict[str, list[str]]) -> list[tuple[datetime, datetime]]:
    return [(datetime.fromisoformat(r["loanDate"]), datetime.fromisoformat(r["dueDate"])) for r in _records(rows["loan"])]


def test_ptf_datasets_seed_loans_due_in_2019_and_2020_and_current_ones_on_request(tmp_path):
    """PTF's seed loans were due from 12 May 2019 to 12 May 2020: cico's and renewals' are dated so, spread over
    that year, lent one loan period (3 weeks) before, whenever they are seeded; `loans = "current"` lends them
    in the two weeks before the seed, due after it, as holds' are."""
    later = "2031-07-20T08:00:00.000+00:00"
    for name, scale in (("cico", 0.01), ("renewals", 0.1)):
        assert dataset.load(name).loans == "overdue"
        dates = _loan_dates(_generate(name, scale))
        assert len(dates) == dataset.load(name).scaled(scale).loans
        assert all(datetime(2019, 5, 12, tzinfo=timezone.utc) <= due < datetime(2020, 5, 13, tzinfo=timezone.utc)
                   for _, due in dates)
        assert all(due - lent == timedelta(weeks=3) for lent, due in dates)
        assert len({(due.year, due.month) for _, due in dates}) >= 10  # spread over the year
        assert _loan_dates(_generate(name, scale, later)) == dates  # the same dates whenever seeded (or reset)
    seeded_at = datetime(2026, 3, 2, 10, tzinfo=timezone.utc)
    current = _write(tmp_path, "cico", BASE.replace('loans = "overdue"', 'loans = "current"'))
    assert dataset.load("holds").loans == dataset.load(str(current)).loans == "current"
    for spec in ("holds", str(current)):
        dates = _loan_dates(_generate(spec, 0.01))
        assert dates and all(seeded_at - timedelta(days=14) < lent < seeded_at < due for lent, due in dates)
    assert dataset.load("rih").loans == "current"  # no key: current (rih lends nothing)


def test_every_job_of_a_process_shares_one_vocabulary_it_cannot_change():
    """A process reads (or draws) a locale's and seed's words once: every job of a dataset (a seed, a reset,
    another scale) takes the same words, which no job can alter; another seed, others."""
    def vocabulary(name: str, scale: float):
        ds = dataset.load(name)
        return generate.Generator(generate.Job(ds, ds.scaled(scale), (), "2026-03-02T10:00:00.000+00:00")).vocabulary

    first = vocabulary("holds", 0.01)
    assert vocabulary("holds", 0.02) is first
    assert vocabulary("cico", 0.01) is not first  # its own seed
    assert first.last_names and all(isinstance(words, tuple) for words in vars(first).values())


_WORDS = """
import json, sys
from folioperf.seed import dataset, vocabulary
ds = dataset.load("holds")
words = vocabulary.vocabulary(ds.locale, ds.seed)
print(json.dumps({"faker": "faker" in sys.modules, "words": {n: getattr(words, n) for n, _, _ in vocabulary.POOLS}}))
"""


def _words_in_a_new_process(cache: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _WORDS], capture_output=True, text=True, timeout=120,
                          env={**os.environ, vocabulary.CACHE_DIR_ENV: str(cache)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_faker_draws_a_datasets_words_once_later_processes_read_them(tmp_path):
    """The first process to seed a dataset draws its words from Faker (about 0.4 CPU-s) and keeps them in
    folioperf's cache; the next reads them and never imports Faker: the same words, so the same records.
    A kept file that is damaged is drawn again and replaced."""
    first = _words_in_a_new_process(tmp_path)
    (kept,) = (tmp_path / "vocabulary").glob("faker-*/en_US-3003.json")
    second = _words_in_a_new_process(tmp_path)
    assert first["faker"] and not second["faker"]
    assert second["words"] == first["words"] and len(first["words"]["isbns"]) > 2900

    kept.write_text('{"first_names": ["Ann"]', encoding="utf-8")  # cut short, as by a full disk
    again = _words_in_a_new_process(tmp_path)
    assert again["faker"] and again["words"] == first["words"]
    assert json.loads(kept.read_text(encoding="utf-8")) == first["words"]
    assert not list(kept.parent.glob("*.tmp"))  # no temporary file left beside it


def test_processes_seeding_at_once_draw_a_datasets_words_once(tmp_path):
    """Three processes that need the same words at the same time (a campaign's, a test suite's workers): one
    draws them, the others wait for its file and read it."""
    procs = [subprocess.Popen([sys.executable, "-c", _WORDS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, vocabulary.CACHE_DIR_ENV: str(tmp_path)}) for _ in range(3)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in outputs]
    seen = [json.loads(out) for out, _ in outputs]
    assert sorted(s["faker"] for s in seen) == [False, False, True]
    assert seen[0]["words"] == seen[1]["words"] == seen[2]["words"]


def test_records_have_folio_shapes():
    rows = _generate("holds", 0.01)
    ds = dataset.load("holds")
    users, items, loans, requests_ = (_records(rows[k]) for k in ("users", "item", "loan", "request"))
    instances, holdings = _records(rows["instance"]), _records(rows["holdings_record"])
    user = users[0]
    assert user["type"] == "patron" and user["active"] is True and user["barcode"] == "holdu0000000"
    assert user["personal"]["lastName"] and user["personal"]["firstName"] and "@" in user["personal"]["email"]
    assert user["personal"]["preferredContactTypeId"] == "002" and user["personal"]["addresses"][0]["primaryAddress"]
    assert len({u["username"] for u in users}) == len(users) == len({u["barcode"] for u in users})
    assert all(FOLIO_UUID.match(r["id"]) for r in users + items + loans + requests_ + instances + holdings)
    # every item is Available except the lent ones, which are Checked out with an open loan, and those of the
    # Page requests, Paged
    lent = {loan["itemId"] for loan in loans}
    paged = {r["itemId"] for r in requests_ if r["requestType"] == "Page"}
    assert {i["id"] for i in items if i["status"]["name"] == "Checked out"} == lent
    assert {i["id"] for i in items if i["status"]["name"] == "Paged"} == paged and paged and not paged & lent
    assert {i["status"]["name"] for i in items if i["id"] not in lent | paged} == {"Available"}
    loan = loans[0]
    assert loan["status"] == {"name": "Open"} and loan["action"] == "checkedout" and loan["itemStatus"] == "Checked out"
    assert loan["loanPolicyId"] == ds.used("loan_policy")[0]["id"] and loan["renewalCount"] == 0
    assert loan["dueDate"] > loan["loanDate"]
    # holdings link items to instances; requests are open Holds on lent items, or Pages on Paged ones
    holdings_ids = {h["id"] for h in holdings}
    assert all(i["holdingsRecordId"] in holdings_ids for i in items)
    assert all(r["status"] == "Open - Not yet filled" and r["itemId"] in (lent if r["requestType"] == "Hold" else paged)
               for r in requests_)
    assert not {r["requesterId"] for r in requests_} & {loan["userId"] for loan in loans}
    # SRS: raw ISO 2709 and parsed MARC with the HRID in 001 and the ids in 999 ff
    raw = rows["raw_records_lb"][0].split("\t")[1]
    assert raw.endswith("\x1e\x1d") and int(raw[:5]) == len(raw.encode())
    marc = json.loads(rows["marc_records_lb"][0].split("\t")[1].replace("\\\\", "\\"))
    fields = {tag: value for f in marc["fields"] for tag, value in f.items()}
    assert fields["001"] == instances[0]["hrid"] == "holdin00000000000"
    assert fields["999"]["ind1"] == fields["999"]["ind2"] == "f"
    assert fields["999"]["subfields"][0] == {"i": instances[0]["id"]}
    assert fields["245"]["subfields"][0]["a"] == instances[0]["title"]
