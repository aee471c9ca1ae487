"""mod-orders' reads that inventory pages make, answered as for a library that has no orders (folio-org/mod-orders @
v13.0.10; collection schemas in folio-org/acq-models).

- GET /orders/titles and GET /orders/pieces (`TitlesApi`, `PiecesAPI`): the query goes to mod-orders-storage
  (titles restricted to the user's acquisition units), which finds nothing: `{"titles":[],"totalRecords":0}`,
  `{"pieces":[],"totalRecords":0}`. A query storage cannot parse is storage's 400, which mod-orders passes on as
  `{"errors":[{"message":<storage's text>,"code":"genericError","parameters":[]}],"total_records":1}`
  (`BaseApi.buildErrorResponse`, `HttpException`).
- GET /orders/holding-summary/{id} (`HoldingsSummaryService`): no pieces and no order lines for the holdings record,
  so `{"holdingSummaries":[],"totalRecords":0}`; an id that is not a UUID is RMB's 400 on the path parameter's
  pattern (`holding-summary.raml`).
"""

from __future__ import annotations

from folioperf.folio_layout import Table
from folioperf.sandbox import cql
from folioperf.sandbox.web import JSON, PATRON_UUID, HttpError, Request, Response, Router, dumps, json_response

MODULE = "mod-orders"
ORDERS_STORAGE = "mod_orders_storage"  # where mod-orders-storage keeps them; queries are parsed, never run
TITLES, PIECES = Table(ORDERS_STORAGE, "titles"), Table(ORDERS_STORAGE, "pieces")


def _storage_query(req: Request, table: Table) -> None:
    """Paging as RMB checks it, then the CQL as mod-orders-storage parses it."""
    req.int_arg("offset", 0)
    req.int_arg("limit", 10)
    try:
        req.sandbox.translator.translate(req.arg("query"), table, req.tenant)
    except cql.CQLError as exc:
        raise HttpError(400, dumps({"errors": [{"message": str(exc), "code": "genericError", "parameters": []}],
                                    "total_records": 1}), JSON) from None


def get_titles(req: Request) -> Response:
    _storage_query(req, TITLES)
    return json_response({"titles": [], "totalRecords": 0})


def get_pieces(req: Request) -> Response:
    _storage_query(req, PIECES)
    return json_response({"pieces": [], "totalRecords": 0})


def get_holding_summary(req: Request) -> Response:
    holding_id = req.params["id"]
    if not PATRON_UUID.match(holding_id):
        raise HttpError(400, f"'id' parameter is incorrect. parameter value {{{holding_id}}} is not valid: must match "
                             f'"{PATRON_UUID.pattern}"')
    return json_response({"holdingSummaries": [], "totalRecords": 0})


def register(router: Router) -> None:
    router.add("GET", "/orders/titles", get_titles, MODULE, "orders.titles.collection.get")
    router.add("GET", "/orders/pieces", get_pieces, MODULE, "orders.pieces.collection.get")
    router.add("GET", "/orders/holding-summary/{id}", get_holding_summary, MODULE, "orders.holding-summary.collection.get")
