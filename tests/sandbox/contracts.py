"""FOLIO's published JSON schemas, transcribed for the contract tests: for each record and collection the
fields the schema requires, the JSON type of each field it declares, and whether it forbids other fields
(`additionalProperties: false`). Each shape names the module repository and file it comes from.

These facts are written here, independent of the sandbox's own schema data, so that a contract test fails
when the sandbox drifts from FOLIO. Where a module's code sends fields its schema does not declare, the
shape is left open and says which code file does so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

STR, BOOL, INT, NUM, OBJ, ARR = "string", "boolean", "integer", "number", "object", "array"


@dataclass(frozen=True)
class Shape:
    source: str  # "folio-org/<repo> <path>"
    types: dict[str, Any]  # field → JSON type, Shape, or ListOf
    required: tuple[str, ...] = ()
    closed: bool = False  # additionalProperties: false


@dataclass(frozen=True)
class ListOf:
    item: Union[str, Shape]


def problems(value: Any, shape: Shape, where: str = "$") -> list[str]:
    """Every way `value` differs from `shape`: missing required fields, fields of another type, fields the
    schema forbids."""
    if not isinstance(value, dict):
        return [f"{where}: expected an object ({shape.source}), got {type(value).__name__}"]
    found = [f"{where}.{name}: required by {shape.source}" for name in shape.required if value.get(name) is None]
    for name, item in value.items():
        declared = shape.types.get(name)
        if declared is None:
            if shape.closed:
                found.append(f"{where}.{name}: not declared in {shape.source} (additionalProperties: false)")
            continue
        found += _type_problems(item, declared, f"{where}.{name}")
    return found


def _type_problems(value: Any, declared: Any, where: str) -> list[str]:
    if value is None:
        return []  # a JSON null: the module omits or nulls optional fields
    if isinstance(declared, Shape):
        return problems(value, declared, where)
    if isinstance(declared, ListOf):
        if not isinstance(value, list):
            return [f"{where}: expected an array, got {type(value).__name__}"]
        return [p for i, v in enumerate(value) for p in _type_problems(v, declared.item, f"{where}[{i}]")]
    ok = {STR: isinstance(value, str), BOOL: isinstance(value, bool), INT: isinstance(value, int) and not isinstance(value, bool),
          NUM: isinstance(value, (int, float)) and not isinstance(value, bool), OBJ: isinstance(value, dict),
          ARR: isinstance(value, list)}[declared]
    return [] if ok else [f"{where}: expected {declared}, got {type(value).__name__} {value!r:.60}"]


def collection(source: str, key: str, record: Shape, result_info: bool = False, closed: bool = False) -> Shape:
    types: dict[str, Any] = {key: ListOf(record), "totalRecords": INT}
    if result_info:
        types["resultInfo"] = RESULT_INFO
    return Shape(source, types, (key, "totalRecords"), closed)


RAML = "folio-org/raml schemas/"
METADATA = Shape(RAML + "metadata.schema", {"createdDate": STR, "createdByUserId": STR, "createdByUsername": STR,
                                           "updatedDate": STR, "updatedByUserId": STR, "updatedByUsername": STR},
                 ("createdDate",), closed=True)
TAGS = Shape(RAML + "tags.schema", {"tagList": ListOf(STR)}, closed=True)
RESULT_INFO = Shape(RAML + "resultInfo.schema", {"totalRecords": INT, "totalRecordsEstimated": BOOL, "totalRecordsRounded": INT,
                                                "responseTime": NUM, "facets": ARR, "diagnostics": ARR}, closed=True)
ERRORS = Shape(RAML + "errors.schema", {"errors": ListOf(Shape(RAML + "error.schema", {
    "message": STR, "type": STR, "code": STR,
    "parameters": ListOf(Shape(RAML + "parameters.schema", {"key": STR, "value": STR}))}, ("message",))),
    "total_records": INT})

# -- mod-users ----------------------------------------------------------------------------------------------
USERS = "folio-org/mod-users ramls/"
USER = Shape(USERS + "userdata.json", {
    "username": STR, "id": STR, "externalSystemId": STR, "barcode": STR, "active": BOOL, "type": STR, "patronGroup": STR,
    "departments": ListOf(STR), "meta": OBJ, "proxyFor": ListOf(STR),
    "personal": Shape(USERS + "userdata.json#personal", {
        "pronouns": STR, "lastName": STR, "firstName": STR, "middleName": STR, "preferredFirstName": STR, "email": STR,
        "phone": STR, "mobilePhone": STR, "dateOfBirth": STR, "addresses": ListOf(OBJ), "preferredContactTypeId": STR,
        "preferredContactTypeIds": ListOf(STR), "profilePictureLink": STR}, ("lastName",), closed=True),
    "enrollmentDate": STR, "expirationDate": STR, "createdDate": STR, "updatedDate": STR, "metadata": METADATA,
    "tags": TAGS, "customFields": OBJ, "preferredEmailCommunication": ListOf(STR)}, closed=True)
USER_COLLECTION = collection(USERS + "userdataCollection.json", "users", USER, result_info=True)
GROUP = Shape(USERS + "usergroup.json", {"group": STR, "desc": STR, "id": STR, "expirationOffsetInDays": INT, "source": STR,
                                         "metadata": METADATA}, ("group",))
GROUP_COLLECTION = collection(USERS + "usergroups.json", "usergroups", GROUP)
PROXY = Shape(USERS + "proxyfor.json", {"userId": STR, "proxyUserId": STR, "id": STR, "requestForSponsor": STR,
                                        "createdDate": STR, "notificationsTo": STR, "accrueTo": STR, "status": STR,
                                        "expirationDate": STR, "metadata": METADATA}, closed=True)
PROXY_COLLECTION = collection(USERS + "proxyforCollection.json", "proxiesFor", PROXY)

# -- mod-users-bl, mod-permissions ---------------------------------------------------------------------------
PERMISSION_USER = Shape("folio-org/mod-permissions ramls/permissionUser.json",
                        {"id": STR, "userId": STR, "permissions": ListOf(STR), "metadata": METADATA}, ("userId",), closed=True)
PERMISSION_USER_COLLECTION = collection("folio-org/mod-permissions ramls/permissionUserListObject.json", "permissionUsers",
                                        PERMISSION_USER, result_info=True)
SERVICE_POINTS_USER_EXPANDED = Shape("folio-org/mod-users-bl ramls/servicepointsexpandeduser.json", {
    "id": STR, "userId": STR, "servicePointsIds": ListOf(STR), "servicePoints": ListOf(OBJ), "defaultServicePointId": STR,
    "defaultServicePoint": OBJ, "metadata": METADATA}, ("userId",), closed=True)
COMPOSITE_USER = Shape("folio-org/mod-users-bl ramls/compositeUser.json", {
    "user": Shape("folio-org/mod-users-bl ramls/userdata.json", {"username": STR, "id": STR, "barcode": STR, "active": BOOL,
                                                                 "type": STR, "patronGroup": STR, "personal": OBJ}, ("id",)),
    "patronGroup": Shape("folio-org/mod-users-bl ramls/usergroup.json", {"group": STR, "desc": STR, "id": STR,
                                                                         "metadata": METADATA}, ("group",)),
    "permissions": Shape("folio-org/mod-users-bl ramls/permissionUser.json",
                         {"id": STR, "userId": STR, "permissions": ARR, "metadata": METADATA}, closed=True),
    "proxiesFor": ListOf(PROXY), "servicePointsUser": SERVICE_POINTS_USER_EXPANDED, "tokenExpiration": OBJ, "tenant": STR})

# -- mod-inventory-storage ----------------------------------------------------------------------------------
INV = "folio-org/mod-inventory-storage ramls/schemas/"
ITEM_STORAGE = Shape(INV + "item-storage/item.json", {
    "id": STR, "_version": INT, "hrid": STR, "holdingsRecordId": STR, "order": INT, "formerIds": ListOf(STR),
    "discoverySuppress": BOOL, "displaySummary": STR, "accessionNumber": STR, "barcode": STR, "effectiveShelvingOrder": STR,
    "additionalCallNumbers": ARR, "itemLevelCallNumber": STR, "itemLevelCallNumberPrefix": STR,
    "itemLevelCallNumberSuffix": STR, "itemLevelCallNumberTypeId": STR, "effectiveCallNumberComponents": OBJ, "volume": STR,
    "enumeration": STR, "chronology": STR, "yearCaption": ListOf(STR), "itemIdentifier": STR, "copyNumber": STR,
    "numberOfPieces": STR, "descriptionOfPieces": STR, "numberOfMissingPieces": STR, "missingPieces": STR,
    "missingPiecesDate": STR, "itemDamagedStatusId": STR, "itemDamagedStatusDate": STR, "administrativeNotes": ListOf(STR),
    "notes": ListOf(OBJ), "circulationNotes": ListOf(OBJ),
    "status": Shape(INV + "item-storage/itemStatus.json", {"name": STR, "date": STR}, ("name",), closed=True),
    "materialTypeId": STR, "materialType": OBJ, "permanentLoanTypeId": STR, "temporaryLoanTypeId": STR,
    "permanentLocationId": STR, "permanentLocation": OBJ, "temporaryLocationId": STR, "temporaryLocation": OBJ,
    "effectiveLocationId": STR, "electronicAccess": ListOf(OBJ), "inTransitDestinationServicePointId": STR,
    "statisticalCodeIds": ListOf(STR), "purchaseOrderLineIdentifier": STR, "tags": TAGS, "metadata": METADATA,
    "holdingsRecord2": OBJ, "lastCheckIn": OBJ}, ("materialTypeId", "permanentLoanTypeId", "holdingsRecordId", "status"),
    closed=True)
ITEM_STORAGE_COLLECTION = collection(INV + "item-storage/items.json", "items", ITEM_STORAGE, result_info=True)
HOLDINGS = Shape(INV + "holdings-storage/holdingsRecord.json", {
    "id": STR, "_version": INT, "sourceId": STR, "hrid": STR, "holdingsTypeId": STR, "formerIds": ListOf(STR),
    "instanceId": STR, "permanentLocationId": STR, "temporaryLocationId": STR, "effectiveLocationId": STR,
    "electronicAccess": ListOf(OBJ), "additionalCallNumbers": ARR, "callNumberTypeId": STR, "callNumberPrefix": STR,
    "callNumber": STR, "callNumberSuffix": STR, "shelvingTitle": STR, "acquisitionFormat": STR, "acquisitionMethod": STR,
    "receiptStatus": STR, "administrativeNotes": ListOf(STR), "notes": ListOf(OBJ), "illPolicyId": STR,
    "retentionPolicy": STR, "digitizationPolicy": STR, "holdingsStatements": ListOf(OBJ),
    "holdingsStatementsForIndexes": ListOf(OBJ), "holdingsStatementsForSupplements": ListOf(OBJ), "copyNumber": STR,
    "numberOfItems": STR, "receivingHistory": OBJ, "discoverySuppress": BOOL, "statisticalCodeIds": ListOf(STR),
    "tags": TAGS, "metadata": METADATA}, ("sourceId", "instanceId", "permanentLocationId"), closed=True)
HOLDINGS_COLLECTION = collection(INV + "holdings-storage/holdingsRecords.json", "holdingsRecords", HOLDINGS, result_info=True)
SERVICE_POINT = Shape(INV + "service-points/servicepoint.json", {
    "id": STR, "name": STR, "code": STR, "discoveryDisplayName": STR, "description": STR, "shelvingLagTime": INT,
    "pickupLocation": BOOL, "holdShelfExpiryPeriod": OBJ, "holdShelfClosedLibraryDateManagement": STR,
    "defaultCheckInActionForUseAtLocation": STR, "staffSlips": ListOf(OBJ), "ecsRequestRouting": BOOL,
    "metadata": METADATA}, ("name", "code", "discoveryDisplayName"), closed=True)
SERVICE_POINT_COLLECTION = collection(INV + "service-points/servicepoints.json", "servicepoints", SERVICE_POINT)
LOCATION = Shape(INV + "locations/location.json", {
    "id": STR, "name": STR, "code": STR, "description": STR, "discoveryDisplayName": STR, "isActive": BOOL,
    "institutionId": STR, "institution": OBJ, "campusId": STR, "campus": OBJ, "libraryId": STR, "library": OBJ,
    "details": OBJ, "primaryServicePoint": STR, "primaryServicePointObject": OBJ, "servicePointIds": ListOf(STR),
    "isFloatingCollection": BOOL, "servicePoints": ListOf(OBJ), "isShadow": BOOL, "metadata": METADATA},
    ("name", "code", "institutionId", "campusId", "libraryId", "primaryServicePoint"), closed=True)
LOCATION_COLLECTION = collection(INV + "locations/locations.json", "locations", LOCATION)


def vocabulary(file: str, extra: dict | None = None, required: tuple[str, ...] = ("name",), closed: bool = False) -> Shape:
    """A controlled vocabulary record: id, name, source and metadata, and what else its schema declares."""
    return Shape(INV + file, {"id": STR, "name": STR, "source": STR, "metadata": METADATA, **(extra or {})}, required, closed)


# (endpoint, collection key, record shape, collection file) — mod-inventory-storage ramls/schemas/
VOCABULARIES = [
    ("/identifier-types", "identifierTypes", vocabulary("identifier-types/identifiertype.json"), "identifier-types/identifiertypes.json"),
    ("/contributor-types", "contributorTypes", vocabulary("contributor-types/contributortype.json", {"code": STR},
                                                          ("name", "code", "source")), "contributor-types/contributortypes.json"),
    ("/contributor-name-types", "contributorNameTypes", vocabulary("contributor-name-types/contributornametype.json",
                                                                  {"ordering": STR}), "contributor-name-types/contributornametypes.json"),
    ("/alternative-title-types", "alternativeTitleTypes", vocabulary("alternative-title-types/alternativetitletype.json",
                                                                    required=("name", "source"), closed=True),
     "alternative-title-types/alternativetitletypes.json"),
    ("/instance-note-types", "instanceNoteTypes", vocabulary("instance-note-types/instancenotetype.json", required=("name", "source"),
                                                            closed=True), "instance-note-types/instancenotetypes.json"),
    ("/holdings-note-types", "holdingsNoteTypes", vocabulary("holdings-note-types/holdingsNoteType.json", required=("name", "source"),
                                                            closed=True), "holdings-note-types/holdingsNoteTypes.json"),
    ("/item-note-types", "itemNoteTypes", vocabulary("item-note-types/itemnotetype.json", required=("name", "source"), closed=True),
     "item-note-types/itemnotetypes.json"),
    ("/call-number-types", "callNumberTypes", vocabulary("call-number-types/callnumbertype.json", required=("name", "source"),
                                                        closed=True), "call-number-types/callnumbertypes.json"),
    ("/holdings-types", "holdingsTypes", vocabulary("holdings-types/holdingsType.json", required=("name", "source"), closed=True),
     "holdings-types/holdingsTypes.json"),
    ("/holdings-sources", "holdingsRecordsSources", vocabulary("holdings-sources/holdingsRecordsSource.json"),
     "holdings-sources/holdingsRecordsSources.json"),
    ("/statistical-codes", "statisticalCodes", vocabulary("statistical-codes/statisticalcode.json",
                                                          {"code": STR, "statisticalCodeTypeId": STR},
                                                          ("code", "name", "statisticalCodeTypeId", "source"), closed=True),
     "statistical-codes/statisticalcodes.json"),
    ("/statistical-code-types", "statisticalCodeTypes", vocabulary("statistical-code-types/statisticalcodetype.json",
                                                                  required=("name", "source")),
     "statistical-code-types/statisticalcodetypes.json"),
    ("/instance-formats", "instanceFormats", vocabulary("instance-formats/instanceformat.json", {"code": STR},
                                                        ("name", "code", "source")), "instance-formats/instanceformats.json"),
    ("/instance-statuses", "instanceStatuses", vocabulary("instance-statuses/instancestatus.json", {"code": STR},
                                                          ("code", "name", "source")), "instance-statuses/instancestatuses.json"),
    ("/instance-types", "instanceTypes", vocabulary("instance-types/instancetype.json", {"code": STR}, ("name", "code", "source")),
     "instance-types/instancetypes.json"),
    ("/modes-of-issuance", "issuanceModes", vocabulary("issuance-modes/modeofissuance.json"), "issuance-modes/issuancemodes.json"),
    ("/nature-of-content-terms", "natureOfContentTerms", vocabulary("nature-of-content-terms/natureofcontentterm.json",
                                                                   required=("name", "source"), closed=True),
     "nature-of-content-terms/natureofcontentterms.json"),
    ("/electronic-access-relationships", "electronicAccessRelationships",
     vocabulary("electronic-access-relationships/electronicaccessrelationship.json"),
     "electronic-access-relationships/electronicaccessrelationships.json"),
    ("/classification-types", "classificationTypes", vocabulary("classification-types/classificationtype.json"),
     "classification-types/classificationtypes.json"),
    ("/subject-types", "subjectTypes", vocabulary("subject-types/subject-type.json", required=("name", "source")),
     "subject-types/subject-types.json"),
    ("/material-types", "mtypes", vocabulary("material-types/materialtype.json", closed=True), "material-types/materialtypes.json"),
    ("/loan-types", "loantypes", vocabulary("loan-types/loantype.json", closed=True), "loan-types/loantypes.json"),
    ("/instance-relationship-types", "instanceRelationshipTypes",
     vocabulary("instance-relationship-types/instancerelationshiptype.json"),
     "instance-relationship-types/instancerelationshiptypes.json"),
    ("/ill-policies", "illPolicies", vocabulary("ill-policies/illpolicy.json", required=("name", "source"), closed=True),
     "ill-policies/illpolicies.json"),
    ("/item-damaged-statuses", "itemDamageStatuses", vocabulary("item-damaged-statuses/itemdamagedstatus.json",
                                                                required=("name", "source"), closed=True),
     "item-damaged-statuses/itemdamagedstatuses.json"),
]

# -- mod-inventory --------------------------------------------------------------------------------------------
MOD_INVENTORY = "folio-org/mod-inventory ramls/"
NAMED_REF = Shape(MOD_INVENTORY + "item.json#materialType", {"id": STR, "name": STR}, ("id",), closed=True)
# `_version`: the schema says integer, but ItemRepresentation.java sends the value it read with Vert.x's
# JsonObject.getString, a string (mod-inventory's own tests assert getString("_version") on its records)
INVENTORY_ITEM = Shape(MOD_INVENTORY + "item.json", {
    "id": STR, "_version": STR, "hrid": STR, "holdingsRecordId": STR, "order": INT, "formerIds": ListOf(STR),
    "discoverySuppress": BOOL, "displaySummary": STR, "title": STR, "contributorNames": ListOf(OBJ), "additionalCallNumbers": ARR,
    "callNumber": STR, "barcode": STR, "effectiveShelvingOrder": STR, "accessionNumber": STR, "itemLevelCallNumber": STR,
    "itemLevelCallNumberPrefix": STR, "itemLevelCallNumberSuffix": STR, "itemLevelCallNumberTypeId": STR,
    "effectiveCallNumberComponents": OBJ, "volume": STR, "enumeration": STR, "chronology": STR, "yearCaption": ListOf(STR),
    "itemIdentifier": STR, "copyNumber": STR, "numberOfPieces": STR, "descriptionOfPieces": STR,
    "numberOfMissingPieces": STR, "missingPieces": STR, "missingPiecesDate": STR, "itemDamagedStatusId": STR,
    "itemDamagedStatusDate": STR, "administrativeNotes": ListOf(STR), "notes": ListOf(OBJ), "circulationNotes": ListOf(OBJ),
    "status": Shape(MOD_INVENTORY + "item.json#status", {"name": STR, "date": STR}, ("name",), closed=True),
    "materialType": NAMED_REF, "isBoundWith": BOOL, "boundWithTitles": ListOf(OBJ), "permanentLoanType": NAMED_REF,
    "temporaryLoanType": NAMED_REF, "permanentLocation": NAMED_REF, "temporaryLocation": NAMED_REF,
    "effectiveLocation": Shape(MOD_INVENTORY + "item.json#effectiveLocation", {"id": STR, "name": STR}),
    "electronicAccess": ListOf(OBJ), "inTransitDestinationServicePointId": STR, "statisticalCodeIds": ListOf(STR),
    "purchaseOrderLineIdentifier": STR, "metadata": METADATA, "tags": TAGS, "lastCheckIn": OBJ},
    ("materialType", "permanentLoanType", "status"), closed=True)
INVENTORY_ITEM_COLLECTION = collection(MOD_INVENTORY + "items.json", "items", INVENTORY_ITEM, closed=True)
INVENTORY_INSTANCE = Shape(MOD_INVENTORY + "instance.json", {
    "id": STR, "_version": INT, "hrid": STR, "matchKey": STR, "sourceUri": STR, "source": STR, "parentInstances": ListOf(OBJ),
    "childInstances": ListOf(OBJ), "title": STR, "indexTitle": STR, "alternativeTitles": ListOf(OBJ), "editions": ListOf(STR),
    "series": ListOf(OBJ), "identifiers": ListOf(OBJ), "contributors": ListOf(OBJ), "subjects": ListOf(OBJ),
    "classifications": ListOf(OBJ), "publication": ListOf(OBJ), "publicationFrequency": ListOf(STR),
    "publicationRange": ListOf(STR), "electronicAccess": ListOf(OBJ), "dates": OBJ, "instanceTypeId": STR,
    "instanceFormatIds": ListOf(STR), "physicalDescriptions": ListOf(STR), "languages": ListOf(STR), "notes": ListOf(OBJ),
    "administrativeNotes": ListOf(STR), "modeOfIssuanceId": STR, "catalogedDate": STR, "previouslyHeld": BOOL,
    "staffSuppress": BOOL, "discoverySuppress": BOOL, "deleted": BOOL, "statisticalCodeIds": ListOf(STR),
    "sourceRecordFormat": STR, "statusId": STR, "statusUpdatedDate": STR, "tags": TAGS, "metadata": METADATA,
    "natureOfContentTermIds": ListOf(STR), "isBoundWith": BOOL, "precedingTitles": ListOf(OBJ),
    "succeedingTitles": ListOf(OBJ)}, ("source", "title", "instanceTypeId"), closed=True)
INVENTORY_INSTANCE_COLLECTION = collection(MOD_INVENTORY + "instances.json", "instances", INVENTORY_INSTANCE)

# -- mod-circulation, mod-circulation-storage ------------------------------------------------------------------
CIRC = "folio-org/mod-circulation ramls/"
SP_SUMMARY = Shape(CIRC + "loan.json#checkoutServicePoint", {"name": STR, "code": STR, "discoveryDisplayName": STR,
                                                            "description": STR, "shelvingLagTime": INT, "pickupLocation": BOOL,
                                                            "holdShelfClosedLibraryDateManagement": STR})
LOAN = Shape(CIRC + "loan.json", {
    "id": STR, "userId": STR, "borrower": Shape(CIRC + "loan.json#borrower", {
        "firstName": STR, "lastName": STR, "middleName": STR, "barcode": STR, "preferredFirstName": STR, "patronGroup": STR},
        closed=True),
    "proxyUserId": STR, "itemId": STR, "loanPolicyId": STR, "loanPolicy": OBJ, "overdueFinePolicyId": STR,
    "overdueFinePolicy": OBJ, "lostItemPolicyId": STR, "lostItemPolicy": OBJ,
    "item": Shape(CIRC + "loan.json#item", {
        "id": STR, "title": STR, "callNumber": STR, "copyNumber": STR, "materialType": OBJ, "contributors": ListOf(OBJ),
        "primaryContributor": STR, "holdingsRecordId": STR, "instanceId": STR, "barcode": STR, "location": OBJ, "status": OBJ,
        "inTransitDestinationServicePointId": STR, "inTransitDestinationServicePoint": OBJ, "enumeration": STR,
        "chronology": STR, "volume": STR, "displaySummary": STR, "callNumberComponents": OBJ}, closed=True),
    "itemEffectiveLocationIdAtCheckOut": STR, "status": Shape(CIRC + "loan.json#status", {"name": STR}),
    "forUseAtLocation": OBJ, "loanDate": STR, "dueDate": STR, "returnDate": STR, "systemReturnDate": STR, "action": STR,
    "actionComment": STR, "renewalCount": INT, "dueDateChangedByRecall": BOOL, "dueDateChangedByNearExpireUser": BOOL,
    "dueDateChangedByHold": BOOL, "checkoutServicePointId": STR, "checkinServicePointId": STR,
    "checkoutServicePoint": SP_SUMMARY, "checkinServicePoint": SP_SUMMARY,
    "patronGroupAtCheckout": Shape(CIRC + "loan.json#patronGroupAtCheckout", {"id": STR, "name": STR}, closed=True),
    "feesAndFines": Shape(CIRC + "loan.json#feesAndFines", {"amountRemainingToPay": NUM}, closed=True),
    "declaredLostDate": STR, "isDcb": BOOL, "metadata": METADATA}, ("itemId", "loanDate", "action"))
LOAN_COLLECTION = collection(CIRC + "loans.json", "loans", LOAN)
# the check-in response's item is closed in the schema, but mod-circulation sends more of the item summary
# (copyNumber, primaryContributor, callNumberComponents, ...: src/main/java/.../ItemSummaryRepresentation.java)
CHECK_IN_RESPONSE = Shape(CIRC + "check-in-by-barcode-response.json", {
    "loan": LOAN, "item": Shape(CIRC + "check-in-by-barcode-response.json#item", {
        "id": STR, "title": STR, "callNumber": STR, "materialType": OBJ, "contributors": ListOf(OBJ), "holdingsRecordId": STR,
        "instanceId": STR, "barcode": STR, "location": OBJ, "status": OBJ, "enumeration": STR, "chronology": STR, "volume": STR,
        "displaySummary": STR, "inTransitDestinationServicePointId": STR, "inTransitDestinationServicePoint": OBJ}),
    "staffSlipContext": OBJ, "inHouseUse": BOOL}, closed=True)
# the request's item and searchIndex are closed in mod-circulation's schema, but it sends the item's status and
# location (RequestRepresentation.java) and the storage's searchIndex (mod-circulation-storage request-search-index.json)
REQUEST = Shape(CIRC + "request.json", {
    "id": STR, "requestType": STR, "requestLevel": STR, "requestDate": STR, "patronComments": STR, "requesterId": STR,
    "proxyUserId": STR, "instanceId": STR, "holdingsRecordId": STR, "itemId": STR, "status": STR, "cancellationReasonId": STR,
    "cancelledByUserId": STR, "cancellationAdditionalInformation": STR, "cancelledDate": STR, "position": INT,
    "instance": Shape(CIRC + "request.json#instance", {"title": STR, "identifiers": ListOf(OBJ)}),
    "item": Shape(CIRC + "request.json#item", {"barcode": STR}),
    "requester": Shape(CIRC + "request.json#requester", {"firstName": STR, "lastName": STR, "middleName": STR, "barcode": STR,
                                                         "patronGroupId": STR, "patronGroup": OBJ}, closed=True),
    "proxy": OBJ, "fulfillmentPreference": STR, "deliveryAddressTypeId": STR, "deliveryAddress": OBJ,
    "requestExpirationDate": STR, "holdShelfExpirationDate": STR, "pickupServicePointId": STR, "pickupServicePoint": OBJ,
    "printDetails": OBJ, "tags": TAGS, "metadata": METADATA, "requestProcessingParameters": OBJ, "searchIndex": OBJ,
    "itemLocationCode": STR, "isDcbReRequestCancellation": BOOL},
    ("requesterId", "requestType", "requestDate", "fulfillmentPreference"), closed=True)
REQUEST_COLLECTION = collection(CIRC + "requests.json", "requests", REQUEST)
# mod-circulation answers raml-util's errors.schema, each error with an optional `code` (ErrorCode.java)
CIRCULATION_ERRORS = Shape(CIRC + "raml-util/schemas/errors.schema", {
    "errors": ListOf(Shape(CIRC + "raml-util/schemas/error.schema", {"message": STR, "code": STR, "parameters": ListOf(
        Shape(RAML + "parameters.schema", {"key": STR, "value": STR}))}, ("message",)))}, ("errors",))
STAFF_SLIP = Shape("folio-org/mod-circulation-storage ramls/staff-slip.json", {
    "id": STR, "name": STR, "description": STR, "active": BOOL, "isRawHtml": BOOL, "template": STR, "metadata": METADATA},
    ("name", "template"), closed=True)
STAFF_SLIP_COLLECTION = collection("folio-org/mod-circulation-storage ramls/staff-slips.json", "staffSlips", STAFF_SLIP)

# -- mod-feesfines, mod-patron-blocks, mod-configuration, mod-notes, mod-patron ----------------------------------
FEES = "folio-org/mod-feesfines ramls/"
ACCOUNT = Shape(FEES + "accountdata.json", {
    "amount": NUM, "remaining": NUM, "dateCreated": STR, "dateUpdated": STR, "status": OBJ, "paymentStatus": OBJ,
    "feeFineType": STR, "feeFineOwner": STR, "title": STR, "callNumber": STR, "barcode": STR, "materialType": STR,
    "itemStatus": OBJ, "location": STR, "metadata": METADATA, "dueDate": STR, "returnedDate": STR, "loanId": STR, "userId": STR,
    "itemId": STR, "materialTypeId": STR, "feeFineId": STR, "ownerId": STR, "id": STR, "holdingsRecordId": STR,
    "instanceId": STR, "contributors": ListOf(OBJ), "loanPolicyId": STR, "overdueFinePolicyId": STR,
    "lostItemFeePolicyId": STR, "processId": STR},
    ("amount", "remaining", "status", "paymentStatus", "userId", "feeFineId", "ownerId"), closed=True)
ACCOUNT_COLLECTION = collection(FEES + "accountdataCollection.json", "accounts", ACCOUNT, result_info=True)
MANUAL_BLOCK = Shape(FEES + "manualblockdata.json", {
    "type": STR, "desc": STR, "code": STR, "staffInformation": STR, "patronMessage": STR, "expirationDate": STR,
    "borrowing": BOOL, "renewals": BOOL, "requests": BOOL, "userId": STR, "metadata": METADATA, "id": STR},
    ("desc", "userId"), closed=True)
MANUAL_BLOCK_COLLECTION = collection(FEES + "manualblockdataCollection.json", "manualblocks", MANUAL_BLOCK)
LOST_ITEM_FEE_POLICY = Shape(FEES + "lost-item-fee-policy.json", {
    "name": STR, "description": STR, "itemAgedLostOverdue": OBJ, "patronBilledAfterAgedLost": OBJ,
    "recalledItemAgedLostOverdue": OBJ, "patronBilledAfterRecalledItemAgedLost": OBJ, "chargeAmountItem": OBJ,
    "lostItemProcessingFee": NUM, "chargeAmountItemPatron": BOOL, "chargeAmountItemSystem": BOOL,
    "lostItemChargeFeeFine": OBJ, "returnedLostItemProcessingFee": BOOL, "replacedLostItemProcessingFee": BOOL,
    "replacementProcessingFee": NUM, "replacementAllowed": BOOL, "lostItemReturned": STR, "feesFinesShallRefunded": OBJ,
    "metadata": METADATA, "id": STR}, ("name",), closed=True)
LOST_ITEM_FEE_POLICY_COLLECTION = collection(FEES + "lost-item-fee-policies.json", "lostItemFeePolicies", LOST_ITEM_FEE_POLICY)
AUTOMATED_BLOCKS = Shape("folio-org/mod-patron-blocks ramls/automated-patron-blocks.json", {
    "automatedPatronBlocks": ListOf(Shape("folio-org/mod-patron-blocks ramls/automated-patron-block.json", {
        "patronBlockConditionId": STR, "blockBorrowing": BOOL, "blockRenewals": BOOL, "blockRequests": BOOL, "message": STR},
        ("blockBorrowing", "blockRenewals", "blockRequests", "message"), closed=True))}, ("automatedPatronBlocks",), closed=True)
CONFIG = Shape("folio-org/mod-configuration ramls/_schemas/kv_configuration.schema", {
    "id": STR, "module": STR, "configName": STR, "code": STR, "description": STR, "default": BOOL, "enabled": BOOL,
    "value": STR, "userId": STR, "metadata": METADATA}, ("module", "configName"), closed=True)
CONFIG_COLLECTION = collection("folio-org/mod-configuration ramls/_schemas/kv_configurations.schema", "configs", CONFIG,
                               result_info=True, closed=True)
NOTE_LINKS = Shape("folio-org/mod-notes src/main/resources/swagger.api/schemas/noteCollection.yaml",
                   {"notes": ListOf(OBJ), "totalRecords": INT}, ("notes", "totalRecords"))
HOLD = Shape("folio-org/mod-patron ramls/hold.json", {
    "requestId": STR, "item": Shape("folio-org/mod-patron ramls/hold.json#item", {
        "instanceId": STR, "itemId": STR, "title": STR, "author": STR, "isbn": STR}, ("instanceId",), closed=True),
    "requestDate": STR, "expirationDate": STR, "status": STR, "pickupLocationId": STR, "queuePosition": INT,
    "cancellationReasonId": STR, "canceledByUserId": STR, "cancellationAdditionalInformation": STR, "canceledDate": STR,
    "patronComments": STR, "batchRequestInfo": OBJ}, ("requestDate", "pickupLocationId"))

# -- other modules clients read -----------------------------------------------------------------------------
ORGANIZATION = Shape("folio-org/acq-models mod-orgs/schemas/organization.json", {
    "id": STR, "name": STR, "code": STR, "description": STR, "exportToAccounting": BOOL, "status": STR,
    "organizationTypes": ListOf(STR), "language": STR, "aliases": ListOf(OBJ), "addresses": ListOf(OBJ),
    "phoneNumbers": ListOf(OBJ), "emails": ListOf(OBJ), "urls": ListOf(OBJ), "contacts": ListOf(STR),
    "privilegedContacts": ListOf(STR), "agreements": ListOf(OBJ), "erpCode": STR, "paymentMethod": STR, "accessProvider": BOOL,
    "governmental": BOOL, "licensor": BOOL, "materialSupplier": BOOL, "vendorCurrencies": ListOf(STR), "claimingInterval": INT,
    "discountPercent": NUM, "expectedActivationInterval": INT, "expectedInvoiceInterval": INT,
    "renewalActivationInterval": INT, "subscriptionInterval": INT, "expectedReceiptInterval": INT, "taxId": STR,
    "liableForVat": BOOL, "taxPercentage": NUM, "edi": OBJ, "interfaces": ListOf(STR), "accounts": ListOf(OBJ),
    "isVendor": BOOL, "isDonor": BOOL, "sanCode": STR, "changelogs": ListOf(OBJ), "acqUnitIds": ListOf(STR), "tags": TAGS,
    "metadata": METADATA}, ("name", "status", "code"), closed=True)
ORGANIZATION_COLLECTION = collection("folio-org/acq-models mod-orgs/schemas/organization_collection.json", "organizations",
                                     ORGANIZATION, closed=True)
AUTHORITY_SOURCE_FILE = Shape(
    "folio-org/mod-entities-links src/main/resources/swagger.api/schemas/authority-source-file/authoritySourceFileDto.yaml", {
        "id": STR, "name": STR, "codes": ListOf(STR), "type": STR, "baseUrl": STR, "source": STR, "selectable": BOOL,
        "hridManagement": OBJ, "_version": INT, "metadata": OBJ}, ("name", "codes", "source"))
AUTHORITY_SOURCE_FILE_COLLECTION = collection(
    "folio-org/mod-entities-links .../authoritySourceFileDtoCollection.yaml", "authoritySourceFiles", AUTHORITY_SOURCE_FILE)
CALENDAR = Shape("folio-org/mod-calendar src/main/resources/api/schemas/calendar.yaml", {
    "id": STR, "name": STR, "startDate": STR, "endDate": STR, "assignments": ListOf(STR), "normalHours": ListOf(OBJ),
    "exceptions": ListOf(OBJ), "metadata": OBJ}, ("name", "startDate", "endDate", "assignments", "normalHours", "exceptions"),
    closed=True)
CALENDAR_COLLECTION = collection("folio-org/mod-calendar src/main/resources/api/schemas/calendarCollection.yaml", "calendars",
                                 CALENDAR, closed=True)
CALENDAR_ERRORS = Shape("folio-org/mod-calendar src/main/resources/api/schemas/errorResponse.yaml", {
    "timestamp": STR, "status": INT, "errors": ListOf(Shape("folio-org/mod-calendar .../schemas/error.yaml", {
        "code": STR, "message": STR, "data": OBJ, "_parameters": ARR}, ("code", "message"), closed=True))},
    ("timestamp", "status", "errors"), closed=True)
SOURCE_RECORDS = Shape("folio-org/data-import-raml-storage schemas/dto/sourceRecordCollection.json", {
    "sourceRecords": ListOf(Shape("folio-org/data-import-raml-storage schemas/dto/sourceRecord.json", {
        "recordId": STR, "snapshotId": STR, "recordType": STR, "parsedRecord": OBJ, "deleted": BOOL, "generation": INT,
        "order": INT, "externalIdsHolder": OBJ, "additionalInfo": OBJ, "metadata": OBJ},
        ("recordId", "snapshotId", "recordType", "parsedRecord"))),
    "totalRecords": INT}, ("sourceRecords", "totalRecords"))

# -- the PTF master plan's user and inventory pages (mod-permissions, mod-users-bl, mod-users, ...) ---------------
PERMS = "folio-org/mod-permissions ramls/"
PERMISSION = Shape(PERMS + "permission.json", {
    "permissionName": STR, "displayName": STR, "id": STR, "description": STR, "tags": ListOf(STR), "subPermissions": ARR,
    "childOf": ARR, "grantedTo": ARR, "mutable": BOOL, "visible": BOOL, "dummy": BOOL, "deprecated": BOOL,
    "moduleName": STR, "moduleVersion": STR, "metadata": METADATA}, closed=True)
PERMISSION_COLLECTION = collection(PERMS + "permissionListObject.json", "permissions", PERMISSION)
PERMISSION_NAMES = Shape(PERMS + "permissionNameListObject.json", {"permissionNames": ListOf(STR), "totalRecords": INT},
                         ("permissionNames", "totalRecords"))
# with full=true the names are permission records and totalRecords is missing, although the schema requires it:
# PermsAPI.getAllFullPermissions never sets it
PERMISSION_RECORDS = Shape(PERMS + "permissionNameListObject.json", {"permissionNames": ListOf(PERMISSION),
                                                                     "totalRecords": INT}, ("permissionNames",))
OPEN_TRANSACTIONS = Shape("folio-org/mod-users-bl ramls/openTransactions.json", {
    "userId": STR, "userBarcode": STR, "hasOpenTransactions": BOOL, "loans": INT, "requests": INT, "feesFines": INT,
    "proxies": INT, "blocks": INT}, ("userId", "hasOpenTransactions", "loans", "requests", "feesFines", "proxies", "blocks"),
    closed=True)
DEPARTMENT = Shape(USERS + "department.json", {"id": STR, "name": STR, "code": STR, "usageNumber": INT, "source": STR,
                                               "metadata": METADATA}, ("name", "code"), closed=True)
DEPARTMENT_COLLECTION = collection(USERS + "departmentCollection.json", "departments", DEPARTMENT, closed=True)
CF = "folio-org/folio-custom-fields ramls/"
CUSTOM_FIELD = Shape(CF + "customField.json", {
    "id": STR, "name": STR, "refId": STR, "type": STR, "entityType": STR, "visible": BOOL, "required": BOOL,
    "isRepeatable": BOOL, "order": INT, "helpText": STR,
    "checkboxField": Shape(CF + "checkboxField.json", {"default": BOOL}, closed=True),
    "selectField": Shape(CF + "selectField.json", {"multiSelect": BOOL, "options": Shape(CF + "selectFieldOptions.json", {
        "values": ListOf(Shape(CF + "selectFieldOption.json", {"id": STR, "value": STR, "default": BOOL}, ("value",),
                               closed=True)),
        "sortingOrder": STR}, ("values",), closed=True)}, ("multiSelect", "options"), closed=True),
    "textField": Shape(CF + "textField.json", {"fieldFormat": STR}, ("fieldFormat",), closed=True),
    "displayInAccordion": STR, "metadata": METADATA}, ("name", "type", "entityType"), closed=True)
CUSTOM_FIELD_COLLECTION = collection(CF + "customFieldCollection.json", "customFields", CUSTOM_FIELD, closed=True)
REQUEST_PREFERENCE = Shape("folio-org/mod-circulation-storage ramls/request-preference.json", {
    "id": STR, "userId": STR, "holdShelf": BOOL, "delivery": BOOL, "defaultServicePointId": STR,
    "defaultDeliveryAddressTypeId": STR, "fulfillment": STR, "metadata": METADATA}, ("userId", "holdShelf", "delivery"),
    closed=True)
REQUEST_PREFERENCE_COLLECTION = collection("folio-org/mod-circulation-storage ramls/request-preferences.json",
                                           "requestPreferences", REQUEST_PREFERENCE)
BOUND_WITH_PART = Shape(INV + "bound-with-parts/bound-with-part.json", {
    "id": STR, "holdingsRecordId": STR, "itemId": STR, "metadata": METADATA}, ("holdingsRecordId", "itemId"), closed=True)
BOUND_WITH_PART_COLLECTION = collection(INV + "bound-with-parts/bound-with-parts.json", "boundWithParts", BOUND_WITH_PART)
COPYCAT_PROFILE = Shape("folio-org/mod-copycat ramls/copycatprofile.json", {
    "id": STR, "name": STR, "url": STR, "authentication": STR, "externalIdQueryMap": STR, "internalIdEmbedPath": STR,
    "createJobProfileId": STR, "updateJobProfileId": STR, "allowedCreateJobProfileIds": ListOf(STR),
    "allowedUpdateJobProfileIds": ListOf(STR), "targetOptions": OBJ, "externalIdentifierType": STR, "enabled": BOOL,
    "metadata": METADATA}, ("name", "createJobProfileId", "updateJobProfileId"), closed=True)
COPYCAT_PROFILE_COLLECTION = collection("folio-org/mod-copycat ramls/copycatcollection.json", "profiles", COPYCAT_PROFILE)
SPRING_METADATA = OBJ  # the Spring modules' metadata objects (createdDate, createdByUserId, updatedDate, ...)
TAG = Shape("folio-org/mod-tags src/main/resources/swagger.api/tags.yml#tagDto", {
    "id": STR, "label": STR, "description": STR, "metadata": SPRING_METADATA}, ("label",))
TAG_COLLECTION = Shape("folio-org/mod-tags src/main/resources/swagger.api/tags.yml#tagDtoCollection",
                       {"tags": ListOf(TAG), "totalRecords": INT}, ("tags",))
NOTE_TYPE = Shape("folio-org/mod-notes src/main/resources/swagger.api/schemas/noteType.yaml#noteType", {
    "id": STR, "name": STR, "usage": Shape("folio-org/mod-notes noteType.yaml#noteType.usage", {"isAssigned": BOOL}),
    "metadata": SPRING_METADATA}, ("name",))
NOTE_TYPE_COLLECTION = Shape("folio-org/mod-notes src/main/resources/swagger.api/schemas/noteType.yaml#noteTypeCollection",
                             {"noteTypes": ListOf(NOTE_TYPE), "totalRecords": INT}, ("noteTypes",))
LOCATION_MAPPINGS = Shape("folio-org/mod-remote-storage src/main/resources/swagger.api/remote-storage.yaml"
                          "#remoteLocationConfigurationMappings", {
    "mappings": ListOf(Shape("folio-org/mod-remote-storage .../schemas/remoteLocationConfigurationMapping.json",
                             {"folioLocationId": STR, "configurationId": STR}, ("folioLocationId", "configurationId"),
                             closed=True)),
    "totalRecords": INT}, ("mappings",))
ACQ = "folio-org/acq-models "
TITLE_COLLECTION = Shape(ACQ + "mod-orders-storage/schemas/title_collection.json", {"titles": ARR, "totalRecords": INT},
                         ("titles", "totalRecords"), closed=True)
PIECE_COLLECTION = Shape(ACQ + "mod-orders-storage/schemas/piece_collection.json", {
    "pieces": ARR, "totalRecords": INT, "first": INT, "last": INT}, closed=True)
HOLDING_SUMMARY_COLLECTION = Shape(ACQ + "mod-orders/schemas/holding_summary_collection.json", {
    "holdingSummaries": ARR, "totalRecords": INT}, ("holdingSummaries", "totalRecords"))
# -- mod-source-record-storage's record (GET /source-storage/records/{id}/formatted) --------------------------
DI = "folio-org/data-import-raml-storage schemas/"  # at 437a0eb, the commit mod-source-record-storage 5.10.15 uses
SRS_RECORD = Shape(DI + "dto/record.json", {
    "id": STR, "snapshotId": STR, "matchedId": STR, "generation": INT, "recordType": STR,
    "rawRecord": Shape(DI + "mod-source-record-storage/rawRecord.json", {"id": STR, "content": STR}, ("content",), closed=True),
    "parsedRecord": Shape(DI + "mod-source-record-storage/parsedRecord.json", {"id": STR, "content": OBJ,
                                                                               "formattedContent": STR}, ("content",), closed=True),
    "errorRecord": OBJ, "deleted": BOOL, "order": INT,
    "externalIdsHolder": Shape(DI + "common/externalIdsHolder.json", {
        "instanceId": STR, "instanceHrid": STR, "holdingsId": STR, "holdingsHrid": STR, "authorityId": STR,
        "authorityHrid": STR}, closed=True),
    "additionalInfo": Shape(DI + "mod-source-record-storage/additionalInfo.json", {"suppressDiscovery": BOOL}),
    "state": STR, "leaderRecordStatus": STR, "metadata": METADATA},
    ("snapshotId", "matchedId", "recordType", "rawRecord"), closed=True)

# -- mod-quick-marc ----------------------------------------------------------------------------------------------
QM = "folio-org/mod-quick-marc src/main/resources/swagger.api/schemas/common.yaml"
# fieldItem's `content` is `type: object` in the OpenAPI file, a java.lang.Object the module fills with the field's
# text or, for 006/007/008, a map of its elements: it is left undeclared here
QUICK_MARC_VIEW = Shape(QM + "#quickMarcView", {
    "leader": STR, "fields": ListOf(Shape(QM + "#fieldItem", {
        "tag": STR, "indicators": ListOf(STR), "isProtected": BOOL,
        "linkDetails": Shape(QM + "#linkDetails", {"authorityId": STR, "authorityNaturalId": STR, "linkingRuleId": INT,
                                                   "status": STR, "errorCause": STR})}, ("tag", "content"))),
    "suppressDiscovery": BOOL, "marcFormat": STR, "parsedRecordId": STR, "parsedRecordDtoId": STR, "externalId": STR,
    "externalHrid": STR, "updateInfo": Shape(QM + "#updateInfo", {
        "recordState": STR, "updateDate": STR, "updatedBy": Shape(QM + "#userInfo", {
            "userId": STR, "username": STR, "lastName": STR, "firstName": STR, "middleName": STR})})},
    ("marcFormat", "leader", "fields"))
SPRING = "folio-org/folio-spring-support folio-spring-base src/main/resources/swagger.api/tenant.yaml"
SPRING_ERROR = Shape(SPRING + "#error", {"message": STR, "type": STR, "code": STR, "parameters": ListOf(
    Shape(SPRING + "#parameter", {"key": STR, "value": STR}, ("key",)))}, ("message",))
SPRING_ERRORS = Shape(SPRING + "#errors", {"errors": ListOf(SPRING_ERROR), "total_records": INT})

# -- mod-circulation's pick slips ------------------------------------------------------------------------------
# staff-slips-response.json closes each part, but the mappers send more than it declares (InventoryMapper's
# instanceHrid, datesOfPublication, displaySummary, ...; RequestMapper's requestDate; UserMapper's
# preferredFirstName, patronGroup, departments, primary address; StaffSlipMapper's currentDateTime): open here
PICK_SLIPS = Shape(CIRC + "staff-slips-response.json", {
    "pickSlips": ListOf(Shape(CIRC + "staff-slips-response.json#pickSlips", {
        "item": Shape(CIRC + "staff-slips-response.json#item", {
            "title": STR, "barcode": STR, "status": STR, "primaryContributor": STR, "allContributors": STR,
            "enumeration": STR, "volume": STR, "chronology": STR, "yearCaption": STR, "materialType": STR, "loanType": STR,
            "copy": STR, "numberOfPieces": STR, "descriptionOfPieces": STR, "effectiveLocationSpecific": STR,
            "effectiveLocationInstitution": STR, "effectiveLocationCampus": STR, "effectiveLocationLibrary": STR,
            "callNumber": STR, "callNumberPrefix": STR, "callNumberSuffix": STR}),
        "request": Shape(CIRC + "staff-slips-response.json#request", {
            "requestID": STR, "servicePointPickup": STR, "requestExpirationDate": STR, "holdShelfExpirationDate": STR,
            "additionalInfo": STR, "reasonForCancellation": STR, "deliveryAddressType": STR, "patronComments": STR}),
        "requester": Shape(CIRC + "staff-slips-response.json#requester", {
            "firstName": STR, "middleName": STR, "lastName": STR, "barcode": STR, "addressLine1": STR,
            "addressLine2": STR, "city": STR, "region": STR, "postalCode": STR, "countryId": STR})})),
    "totalRecords": INT}, ("pickSlips", "totalRecords"), closed=True)


# -- mod-search ---------------------------------------------------------------------------------------------
SEARCH = "folio-org/mod-search src/main/resources/swagger.api/schemas/"
SEARCH_METADATA = Shape(SEARCH + "dto/common/metadata.yaml", {"createdDate": STR, "createdByUserId": STR, "updatedDate": STR,
                                                              "updatedByUserId": STR}, closed=True)
SEARCH_TAGS = Shape(SEARCH + "dto/common/tags.yaml", {"tagList": ListOf(STR)}, closed=True)
SEARCH_IDENTIFIER = Shape(SEARCH + "dto/common/identifier.yaml", {"value": STR, "identifierTypeId": STR}, closed=True)
ELECTRONIC_ACCESS = Shape(SEARCH + "dto/instance/electronicAccess.yaml", {"uri": STR, "linkText": STR,
                                                                          "materialsSpecification": STR, "publicNote": STR})
SEARCH_NOTE = Shape(SEARCH + "dto/instance/note.yaml", {"note": STR, "staffOnly": BOOL})
SEARCH_ITEM = Shape(SEARCH + "dto/instance/item.yaml", {
    "id": STR, "tenantId": STR, "holdingsRecordId": STR, "hrid": STR, "accessionNumber": STR, "formerIds": ListOf(STR),
    "itemIdentifier": STR, "barcode": STR, "effectiveLocationId": STR, "status": Shape(SEARCH + "dto/instance/item.yaml#status",
                                                                                     {"name": STR}),
    "materialTypeId": STR, "discoverySuppress": BOOL, "effectiveCallNumberComponents": Shape(
        SEARCH + "dto/instance/item.yaml#effectiveCallNumberComponents", {"callNumber": STR, "prefix": STR, "suffix": STR,
                                                                         "typeId": STR}),
    "volume": STR, "enumeration": STR, "chronology": STR, "copyNumber": STR, "itemLevelCallNumberTypeId": STR,
    "tags": SEARCH_TAGS, "electronicAccess": ListOf(ELECTRONIC_ACCESS), "administrativeNotes": ListOf(STR),
    "notes": ListOf(SEARCH_NOTE), "statisticalCodeIds": ListOf(STR), "circulationNotes": ListOf(SEARCH_NOTE),
    "metadata": SEARCH_METADATA}, ("notes",))
SEARCH_HOLDING = Shape(SEARCH + "dto/instance/holding.yaml", {
    "id": STR, "tenantId": STR, "permanentLocationId": STR, "discoverySuppress": BOOL, "hrid": STR, "sourceId": STR,
    "formerIds": ListOf(STR), "statisticalCodeIds": ListOf(STR), "tags": SEARCH_TAGS, "holdingsTypeId": STR,
    "callNumberPrefix": STR, "callNumber": STR, "callNumberSuffix": STR, "copyNumber": STR,
    "electronicAccess": ListOf(ELECTRONIC_ACCESS), "administrativeNotes": ListOf(STR), "notes": ListOf(SEARCH_NOTE),
    "metadata": SEARCH_METADATA}, ("electronicAccess", "notes"))
SEARCH_INSTANCE = Shape(SEARCH + "entity/instance.yaml", {
    "id": STR, "tenantId": STR, "shared": BOOL, "hrid": STR, "source": STR, "statisticalCodeIds": ListOf(STR),
    "statusId": STR, "title": STR, "indexTitle": STR,
    "series": ListOf(Shape(SEARCH + "dto/instance/seriesItem.yaml", {"value": STR, "authorityId": STR}, closed=True)),
    "alternativeTitles": ListOf(Shape(SEARCH + "dto/instance/alternativeTitle.yaml", {
        "alternativeTitleTypeId": STR, "alternativeTitle": STR, "authorityId": STR}, closed=True)),
    "identifiers": ListOf(SEARCH_IDENTIFIER),
    "contributors": ListOf(Shape(SEARCH + "dto/instance/contributor.yaml", {
        "name": STR, "contributorTypeId": STR, "contributorTypeText": STR, "contributorNameTypeId": STR, "authorityId": STR,
        "primary": BOOL}, closed=True)),
    "subjects": ListOf(Shape(SEARCH + "dto/instance/subject.yaml", {"value": STR, "authorityId": STR, "sourceId": STR,
                                                                    "typeId": STR}, closed=True)),
    "dates": Shape(SEARCH + "dto/instance/dates.yaml", {"dateTypeId": STR, "date1": STR, "date2": STR}, closed=True),
    "instanceTypeId": STR, "instanceFormatIds": ListOf(STR), "languages": ListOf(STR), "metadata": SEARCH_METADATA,
    "administrativeNotes": ListOf(STR), "modeOfIssuanceId": STR, "natureOfContentTermIds": ListOf(STR),
    "publication": ListOf(Shape(SEARCH + "dto/instance/publication.yaml", {"publisher": STR, "dateOfPublication": STR,
                                                                           "place": STR})),
    "staffSuppress": BOOL, "discoverySuppress": BOOL, "isBoundWith": BOOL, "tags": SEARCH_TAGS,
    "classifications": ListOf(Shape(SEARCH + "dto/instance/classification.yaml", {"classificationNumber": STR,
                                                                                  "classificationTypeId": STR})),
    "electronicAccess": ListOf(ELECTRONIC_ACCESS), "notes": ListOf(SEARCH_NOTE), "items": ListOf(SEARCH_ITEM),
    "holdings": ListOf(SEARCH_HOLDING)}, ("electronicAccess", "notes", "items", "holdings"))
INSTANCE_SEARCH_RESULT = Shape(SEARCH + "response/instanceSearchResult.yaml",
                               {"totalRecords": INT, "instances": ListOf(SEARCH_INSTANCE)})
# authority.yaml: a heading field is a string, its see-from (sft) and see-also-from (saft) tracings arrays
_HEADINGS = ("personalName", "personalNameTitle", "corporateName", "corporateNameTitle", "meetingName", "meetingNameTitle",
             "uniformTitle", "namedEvent", "generalSubdivision", "topicalTerm", "geographicName", "genreTerm", "chronTerm",
             "mediumPerfTerm", "geographicSubdivision", "chronSubdivision", "formSubdivision")
SEARCH_AUTHORITY = Shape(SEARCH + "dto/authority/authority.yaml", {
    "id": STR, "tenantId": STR, "shared": BOOL, "source": STR, "sourceFileId": STR, "naturalId": STR,
    **{name: STR for name in _HEADINGS},
    **{f"{prefix}{name[0].upper()}{name[1:]}": ListOf(STR) for name in _HEADINGS for prefix in ("sft", "saft")},
    "subjectHeadings": STR, "identifiers": ListOf(SEARCH_IDENTIFIER),
    "notes": ListOf(Shape(SEARCH + "dto/authority/authorityNote.yaml", {"noteTypeId": STR, "note": STR})),
    "metadata": SEARCH_METADATA, "headingType": STR, "authRefType": STR, "headingRef": STR, "numberOfTitles": INT})
AUTHORITY_SEARCH_RESULT = Shape(SEARCH + "response/authoritySearchResult.yaml",
                                {"totalRecords": INT, "authorities": ListOf(SEARCH_AUTHORITY)})
FACET = Shape(SEARCH + "entity/facet.yaml", {
    "values": ListOf(Shape(SEARCH + "entity/facetItem.yaml", {"id": STR, "totalRecords": NUM})), "totalRecords": INT})
FACET_RESULT = Shape(SEARCH + "response/facetResult.yaml", {"facets": OBJ, "totalRecords": INT})  # facets: name → FACET
SEARCH_ERRORS = Shape(SEARCH + "response/errorResponse.yaml", {
    "errors": ListOf(Shape(SEARCH + "entity/error.yaml", {"message": STR, "type": STR, "code": STR, "parameters": ListOf(
        Shape(SEARCH + "entity/parameter.yaml", {"key": STR, "value": STR}))})),
    "total_records": INT})
