"""Patron blocks: mod-feesfines' manual blocks and mod-patron-blocks' automated blocks
(docs/folio.md §4.8, §5.1 step 3, §5.3, §5.4), as the check-out, renewal and request rules consult them,
plus their endpoints.

Automated blocks follow mod-patron-blocks' `ActionBlocks.byLimit`: the limits configured for the
patron's group, each against its condition (items charged out: borrowing blocked at the limit, renewals
and requests above it; lost, overdue and overdue-recall counts, days a recall is overdue and the
outstanding fee/fine balance: blocked above the limit), an action blocked only when the condition says
so. mod-patron-blocks keeps the user's figures in `user_summary`, fed by Kafka events; the sandbox has no
event stream, so it computes the same figures from the loan and accounts tables when asked — always
current, where FOLIO's are eventually consistent. Overdue means past the due date (no grace periods).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from folioperf.sandbox import lookups
from folioperf.sandbox.schema import BY_NAME
from folioperf.sandbox.storage import Collection, register_collection
from folioperf.sandbox.trace import calls
from folioperf.sandbox.web import UUID, HttpError, Request, Response, Router, error, json_response

MANUAL_MESSAGES = {
    "borrowing": "Patron blocked from borrowing",
    "renewals": "Patron blocked from renewing",
    "requests": "Patron blocked from requesting",
}
AUTOMATED_FLAGS = {"borrowing": "blockBorrowing", "renewals": "blockRenewals", "requests": "blockRequests"}

# mod-patron-blocks' fixed condition ids (domain/Condition.java)
ITEMS_CHARGED_OUT = "3d7c52dc-c732-4223-8bf8-e5917801386f"
LOST_ITEMS = "72b67965-5b73-4840-bc0b-be8f3f6e047e"
OVERDUE_ITEMS = "584fbd4f-6a34-4730-a6ca-73a6a6a9d845"
OVERDUE_RECALLS = "e5b45031-a202-4abb-917b-e1df9346fe2c"
RECALL_OVERDUE_DAYS = "08530ac4-07f2-48e6-9dda-a97bc2bf7053"
FEE_FINE_BALANCE = "cf7a0d5f-a327-4ca1-aa9e-dc55ec006b8a"

USERS, MANUAL, LIMITS = BY_NAME["users"], BY_NAME["manualblocks"], BY_NAME["patron_block_limits"]
CONDITIONS, LOAN, ACCOUNTS = BY_NAME["patron_block_conditions"], BY_NAME["loan"], BY_NAME["accounts"]


@calls("GET", "mod-users", "/users..")
def user_and_blocks(conn: psycopg.Connection, tenant: str, *, barcode: str | None = None,
                    user_id: str | None = None) -> tuple[dict | None, list[dict], bool]:
    """(user, the user's manual blocks, whether the user's patron group has block limits) in one query."""
    if barcode is not None:
        where, value = lookups.field_eq(USERS, tenant, "barcode", "v"), barcode
    else:
        if not user_id or not UUID.match(user_id):
            return None, [], False
        where, value = sql.SQL("u.id = %(v)s::uuid"), user_id
    row = conn.execute(
        sql.SQL(
            "SELECT u.jsonb, coalesce((SELECT jsonb_agg(m.jsonb) FROM {manual} m WHERE {manual_user}), '[]'::jsonb), "
            "EXISTS (SELECT 1 FROM {limits} l WHERE l.jsonb->>'patronGroupId' = u.jsonb->>'patronGroup') "
            "FROM {users} u WHERE {where}"
        ).format(manual=MANUAL.ident(tenant), manual_user=lookups.field_eq_sql(MANUAL, tenant, "userId", "u.id::text"),
                 limits=LIMITS.ident(tenant), users=USERS.ident(tenant), where=where),
        {"v": value},
    ).fetchone()
    if row is None:
        return None, [], False
    return row[0], row[1], bool(row[2])


def manual_errors(blocks: list[dict], action: str) -> list[dict]:
    """mod-circulation's UserManualBlocksValidator: one error when any unexpired block stops `action`;
    its `reason` joins the descriptions of all the user's manual blocks."""
    now = lookups.now()
    for block in blocks:
        expires = lookups.parse_date(block.get("expirationDate"))
        if block.get(action) and (expires is None or expires > now):
            return [error(MANUAL_MESSAGES[action], reason=";".join(b.get("desc") or "" for b in blocks))]
    return []


def _summary(conn: psycopg.Connection, tenant: str, user_id: str) -> dict:
    row = conn.execute(
        sql.SQL(
            "WITH open AS (SELECT jsonb->>'itemStatus' AS status, (jsonb->>'dueDate')::timestamptz AS due, "
            "coalesce((jsonb->>'dueDateChangedByRecall')::boolean, false) AS recall "
            "FROM {loan} WHERE {user} AND {open}), "
            "counted AS (SELECT * FROM open WHERE status IS DISTINCT FROM 'Claimed returned') "
            "SELECT (SELECT count(*) FROM counted), "
            "(SELECT count(*) FROM counted WHERE status IN ('Declared lost', 'Aged to lost')), "
            "(SELECT count(*) FROM counted WHERE due < now()), "
            "(SELECT count(*) FROM counted WHERE due < now() AND recall), "
            "(SELECT coalesce(max(ceil(extract(epoch FROM now() - due) / 86400)), 0) FROM counted WHERE due < now() AND recall), "
            "(SELECT coalesce(sum((jsonb->>'remaining')::numeric), 0) FROM {accounts} "
            " WHERE {account_user} AND lower(jsonb->'status'->>'name') = 'open')"
        ).format(loan=LOAN.ident(tenant), user=lookups.field_eq(LOAN, tenant, "userId", "u"), open=lookups.is_open_loan(tenant),
                 accounts=ACCOUNTS.ident(tenant), account_user=lookups.field_eq(ACCOUNTS, tenant, "userId", "u")),
        {"u": user_id},
    ).fetchall()[0]
    keys = ("openLoans", "lost", "overdue", "overdueRecalls", "recallOverdueDays", "balance")
    return dict(zip(keys, (float(v) for v in row)))


def automated_blocks(conn: psycopg.Connection, tenant: str, user: dict) -> list[dict]:
    """mod-patron-blocks' `automatedPatronBlocks` for a user: empty when the group has no limits."""
    limits = conn.execute(
        sql.SQL(
            "SELECT l.jsonb, c.jsonb FROM {limits} l JOIN {conditions} c ON c.id::text = l.jsonb->>'conditionId' "
            "WHERE l.jsonb->>'patronGroupId' = %s"
        ).format(limits=LIMITS.ident(tenant), conditions=CONDITIONS.ident(tenant)),
        (user.get("patronGroup"),),
    ).fetchall()
    if not limits:
        return []
    s = _summary(conn, tenant, user["id"])
    blocks = []
    for limit, condition in limits:
        value = float(limit.get("value") or 0)
        cid = condition["id"]
        if cid == ITEMS_CHARGED_OUT:
            by_limit = (s["openLoans"] >= value, s["openLoans"] > value, s["openLoans"] > value)
        else:
            reached = {
                LOST_ITEMS: s["lost"] > value,
                OVERDUE_ITEMS: s["overdue"] > value,
                OVERDUE_RECALLS: s["overdueRecalls"] > value,
                RECALL_OVERDUE_DAYS: s["recallOverdueDays"] > value,
                FEE_FINE_BALANCE: s["balance"] > value,
            }.get(cid, False)
            by_limit = (reached, reached, reached)
        flags = tuple(b and bool(condition.get(f)) for b, f in zip(by_limit, ("blockBorrowing", "blockRenewals", "blockRequests")))
        if any(flags):
            blocks.append({"patronBlockConditionId": cid, "blockBorrowing": flags[0], "blockRenewals": flags[1],
                           "blockRequests": flags[2], "message": condition.get("message") or ""})
    return blocks


def automated_errors(conn: psycopg.Connection, tenant: str, user: dict, action: str) -> list[dict]:
    """One error per automated block that stops `action`, carrying the block's message (no parameters)."""
    flag = AUTOMATED_FLAGS[action]
    return [error(b["message"]) for b in automated_blocks(conn, tenant, user) if b[flag]]


@calls("GET", "mod-patron-blocks", "/automated-patron-blocks")
def action_errors(conn: psycopg.Connection, tenant: str, user: dict, manual: list[dict], has_limits: bool, action: str) -> list[dict]:
    """Manual then automated block errors for `action` ("borrowing", "renewals" or "requests")."""
    errors = manual_errors(manual, action)
    if has_limits:
        errors += automated_errors(conn, tenant, user, action)
    return errors


def _get_automated(req: Request) -> Response:
    user_id = req.params["userId"]
    if not UUID.match(user_id):
        raise HttpError(400, f"'userId' parameter is incorrect. parameter value {{{user_id}}} is not valid: "
                             'must match "^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[1-5][a-fA-F0-9]{3}-[89abAB][a-fA-F0-9]{3}-[a-fA-F0-9]{12}$"')
    with req.sandbox.pool.connection() as conn:
        user, _, has_limits = user_and_blocks(conn, req.tenant, user_id=user_id)
        blocks = automated_blocks(conn, req.tenant, user) if user is not None and has_limits else []
    return json_response({"automatedPatronBlocks": blocks})


COLLECTIONS: tuple[Collection, ...] = (
    Collection("/manualblocks", "manualblocks", "manualblocks", "mod-feesfines", "manualblocks"),
    Collection("/patron-block-conditions", "patron_block_conditions", "patronBlockConditions", "mod-patron-blocks",
               "patron-block-conditions"),
    Collection("/patron-block-limits", "patron_block_limits", "patronBlockLimits", "mod-patron-blocks",
               "patron-block-limits"),
)


def register(router: Router) -> None:
    router.add("GET", "/automated-patron-blocks/{userId}", _get_automated, "mod-patron-blocks", "automated-patron-blocks.collection.get")
    for c in COLLECTIONS:
        register_collection(router, c)
