"""What the PTF master plan's groups share (folio-org/perf-testing,
workflows-scripts/master-script-updated/master-script-longevity.jmx): the plan-wide header manager every call
carries (lines 894-946: a Chrome 111 browser's headers, JSON in and out), the tenant and token aside."""

from __future__ import annotations

from folioperf import Okapi
from folioperf.auth import claims

# `${current_userID}`, PRO's user-defined variable `${__P(current_user_id)}` (line 28832), named by ETT, IRO and PRO:
# JMeter sets every enabled user-defined variable of the plan, wherever it stands, for every thread when it compiles
# the plan (PreCompiler; JMeterThread.setInitialContext), before the setUp group's login puts the property: `__P`'s
# default, "1".
UNSET_CURRENT_USER = "1"

MASTER_HEADERS = {
    "sec-ch-ua": '"Google Chrome";v="111", "Not(A:Brand";v="8", "Chromium";v="111"',
    "sec-ch-ua-mobile": "?0",
    "sec-ch-ua-platform": '"Windows"',
    "User-Agent": ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                   "Chrome/111.0.0.0 Safari/537.36"),
    "Accept-Language": "en-US",
    "Sec-Fetch-Site": "same-site",
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Dest": "empty",
    "Accept-Encoding": "gzip, deflate, br",
    "Content-Type": "application/json",
    "Accept": "application/json",
}


def percent(text: str) -> float:
    """An option's percent (a Throughput Controller's share of iterations): 0 to 100."""
    value = float(text)
    if not 0 <= value <= 100:
        raise ValueError("a percent from 0 to 100")
    return value


def current_user_id(okapi: Okapi, as_written: bool) -> str:
    """The plan's `${current_userID}`: "1" as JMeter ran it; as written, the logged-in user's id (its token's claim,
    so no call the plan does not make)."""
    if not as_written:
        return UNSET_CURRENT_USER
    okapi.authenticate()
    tokens = okapi.login.tokens()
    return str(claims(tokens[0]).get("user_id", UNSET_CURRENT_USER)) if tokens else UNSET_CURRENT_USER
