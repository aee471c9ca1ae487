"""The PTF master plan's Patron Record Operations (PRO; master-script-longevity.jmx lines 28802-36295): a librarian
creates a user in the Users app, views one, edits one or deletes one.

Each iteration: the JSR223 samplers "Branch selector randomizer" and "SWITCH" (lines 28859, 28876: samples the
throughput timer paces, folioperf's `script`) pick create, view, edit or delete by `PRO_DISTRIBUTION` (line 528:
25-25-25-25; the value's trailing space is trimmed by BranchSelectorRandomizerScript.gvy; `--distribution`). Then:

    PRO_TC: Create User (line 28911)   5 list loads, 14 form loads, the Flow Control Action "Define UUID" (a 0 ms
                                       sample whose pre-processor draws the three uuid4s), POST /users, POST
                                       request-preference, POST /perms/users, then the new user's page: 40 GETs
    PRO_TC: View User (line 31055)     the user search (9 fields, by the CSV's name), the user's page (34 GETs),
                                       the scripts of `PRO_DISTRIBUTION_OC` (line 534: 50-50; `--loans`) and the
                                       open or closed loans page (6 GETs)
    PRO_TC: Edit User (line 32702)     the search, the user's page, the edit form (27 GETs incl. perms/permissions
                                       twice), PUT /users/{id} (personal.email "new@mail.com"), PUT /perms/users,
                                       PUT /service-points-users, PUT request-preference, each when the form's
                                       GET found the record (the Ifs at lines 34857-34966)
    PRO_TC: Delete User (line 35010)   the search, the user's page, GET /bl-users/by-id/{id}/open-transactions and,
                                       when it has none, DELETE /bl-users/by-id/{id} (line 36250)

The group's ConstantThroughputTimer, 217 samples a minute (line 36292, calcMode 2: all active threads of the group,
of which the plan has 1), paces every sampler, the scripts and the Flow Control Action included: `--pace 217/m`, as
scenarios/ptf-master.toml runs it; about 4 iterations a minute, one delete.

As JMeter ran it (the default):
- `${current_userID}` (the group's user-defined variable `${__P(current_user_id)}`, line 28832) was set when JMeter
  compiled the plan, before the setUp group's login put the property `current_user_id`: `__P`'s default, "1". The
  page's `users?query=id==${current_userID}` sends `id==1`. `--plan as-written`: the logged-in user's id.
- "If user exists" tests `!vars.remove("user_found").equals("user_not_found")` (line 31125); the JSR223 Assertion
  that would set it after the search is disabled (line 31096), so it reads what the previous extractor left. The
  edit form's `users?query=id==...` has a JSON extractor `$.id` defaulting to "user_not_found" (line 34086), which a
  list never has: after an edit, the next view, edit or delete stops after its search. `--plan as-written`: every
  user found goes on.
- The custom fields' `x-okapi-module-id` is the plan's `mod-users-19.1.1` (line 28842), its FOLIO's mod-users:
  here the target's mod-users, as the UI sends it (the plan's when the target does not list its modules).
- The new user's `patronGroup` is the PTF tenant's group (line 28837): here a patron group of the dataset.

The test data (datasets/pro.toml, its own users so that no other group holds a user PRO deletes): the users in id
order, seven in eight to view and edit (the plan's PRO_users.csv: a user's id and last name; shared, round-robin),
every eighth to delete (a `once` pool: each deleted once). The dataset's 2,500 users to delete last about 41 hours
at the default split (about 60 deletes an hour).
"""

from __future__ import annotations

import random
import uuid

from folioperf.workflows.master_plan import MASTER_HEADERS, current_user_id

from folioperf import FolioTaskSet, FolioUser, Option, TestData, Workflow, task
from folioperf.jmeter import AS_WRITTEN, Delay
from folioperf.target_info import target_info

CREATE, VIEW, EDIT, DELETE = ("PRO_TC: Create User", "PRO_TC: View User", "PRO_TC: Edit User",  # lines 28911, 31055,
                              "PRO_TC: Delete User")  # 32702, 35010
SCRIPTS = ("Branch selector randomizer", "SWITCH")  # lines 28859, 28876; the loans split's at 32268, 32285
DEFINE_UUID = Delay("constant", 0)  # the Flow Control Action "Define UUID" (line 29579): pause 0 ms
PLAN_USERS_MODULE = "mod-users-19.1.1"  # x-okapi-module-id (line 28842)
NAME_LETTERS = "abcdefghijklmnop"  # `${__RandomString(5,abcdefghijklmnop,)}` (line 29629)
NEW_EMAIL = "new@mail.com"  # the JSR223 PostProcessor at line 34191

ALL = "cql.allRecords=1"
GROUPS, ADDRESS_TYPES = f"{ALL} sortby group", f"{ALL} sortby addressType"
BY_NAME = f"{ALL} sortby name"
PROFILE_PICTURES = "(module==USERS and configName==profile_pictures)"
SUPPRESS_EDIT = 'module=="@folio/users" AND configName=="suppressEdit"'
TAGS_ENABLED = "(module==TAGS and configName==tags_enabled)"
CUSTOM_FIELDS_LABEL = "(module==USERS and configName==custom_fields_label)"
ANY = {"Accept": "*/*"}  # the header managers of the custom-fields label look-ups (e.g. line 29227)
SAVE = {"Accept": "text/plain"}  # "PRO_SC: Users Edit Save"'s header manager (line 34848)


def split(count: int, text: str) -> tuple[int, ...]:
    """"25-25-25-25": `count` percentages adding up to 100 (BranchSelectorRandomizerScript.gvy trims each)."""
    parts = text.strip().split("-")
    if len(parts) != count or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"give {count} percentages joined by '-', e.g. {'-'.join(['50'] * 2 if count == 2 else ['25'] * 4)}")
    shares = tuple(int(p) for p in parts)
    if sum(shares) != 100:
        raise ValueError(f"the {count} percentages must add up to 100")
    return shares


def distribution(text: str) -> tuple[int, ...]:
    return split(4, text)


def loans_split(text: str) -> tuple[int, ...]:
    return split(2, text)


def search_query(keyword: str) -> str:
    """The Users app's search (line 31068): nine fields starting with the keyword."""
    fields = ("username", "personal.firstName", "personal.preferredFirstName", "personal.lastName", "personal.email",
              "barcode", "id", "externalSystemId", "customFields")
    return "((" + " or ".join(f'{f}="{keyword}*"' for f in fields) + ")) sortby personal.lastName personal.firstName"


class PatronRecordOperations(FolioTaskSet):
    def on_start(self) -> None:
        options = self.options
        self.shares = distribution(options.distribution) if isinstance(options.distribution, str) else options.distribution
        self.as_written = self.user.plan == AS_WRITTEN
        self.not_found_left = False  # the thread's `user_found` holds "user_not_found" (see the docstring)
        run = self.user.folioperf
        self.users_module = PLAN_USERS_MODULE
        try:  # the UI names the tenant's mod-users; read as the run reads module versions, unrecorded
            modules = target_info(run.tool_okapi(), run.settings.tenant).modules
            self.users_module = next((m for m in modules if m.startswith("mod-users-") and m[10:11].isdigit()),
                                     PLAN_USERS_MODULE)
        except Exception:  # no rights to list modules: the plan's own
            pass
        self.current_user = current_user_id(self.okapi, self.as_written)

    @task
    def operate(self) -> None:
        for script in SCRIPTS:
            self.script(script)
        # BranchSelectorRandomizerScript.gvy: r in 1..100, the first branch whose cumulative share reaches it
        flow = random.choices((CREATE, VIEW, EDIT, DELETE), weights=self.shares)[0]
        if flow == CREATE:
            with self.transaction(CREATE):
                self._create()
            return
        if flow == DELETE:
            user = self.pools.acquire("delete_users")
            with self.transaction(DELETE):
                self._delete(user)
            return
        user = self.pools.acquire("users")
        with self.transaction(flow):
            if self._search_finds(user):
                self._view(user) if flow == VIEW else self._edit(user)

    # -- the pages -----------------------------------------------------------------------------------------
    def _custom_fields(self) -> None:
        self.okapi.get("/custom-fields", params={"limit": 2147483647},
                       headers={"x-okapi-module-id": self.users_module, **ANY})

    def _label(self, accept_any: bool = True) -> None:
        self.okapi.get("/configurations/entries", params={"query": CUSTOM_FIELDS_LABEL}, headers=ANY if accept_any else None)

    def _lists(self) -> None:
        """The lists the user pages load (PRO_SC: Load Users, lines 28918-29061)."""
        okapi = self.okapi
        okapi.get("/groups", params={"query": GROUPS, "limit": 200})
        okapi.get("/tags", params={"query": f"{ALL} sortby label", "limit": 10000})
        okapi.get("/departments", params={"query": BY_NAME, "limit": 10000})
        okapi.get("/owners", params={"query": ALL, "limit": 10000})

    def _proxies(self, user_id: str) -> None:
        self.okapi.get("/proxiesfor", params={"query": f'(proxyUserId=="{user_id}")', "limit": 50})
        self.okapi.get("/proxiesfor", params={"query": f'(userId=="{user_id}")', "limit": 50})

    def _create(self) -> None:
        okapi = self.okapi
        self._custom_fields()
        self._lists()
        self._proxies("undefined")  # the new user's form (PRO_SC: Load Users Create, line 29096)
        okapi.get("/service-points", params={"query": BY_NAME, "limit": 10000})
        self._custom_fields()
        self._label()
        okapi.get("/groups", params={"query": GROUPS, "limit": 2000})
        okapi.get("/addresstypes", params={"query": ADDRESS_TYPES, "limit": 2000})
        okapi.get("/departments", params={"query": BY_NAME, "limit": 10000})
        okapi.get("/configurations/entries", params={"query": PROFILE_PICTURES})
        okapi.get("/configurations/entries", params={"query": SUPPRESS_EDIT})
        okapi.get("/configurations/entries", params={"query": TAGS_ENABLED})
        self._custom_fields()
        self._label()
        self._label()
        self.action(DEFINE_UUID)  # its JSR223 PreProcessor (line 29585): the user's, preference's, permission user's
        user_id, preference_id, perms_id = (str(uuid.uuid4()) for _ in range(3))
        name = "".join(random.choice(NAME_LETTERS) for _ in range(5))
        group = self.pools.acquire("patron_groups")["id"]
        okapi.post("/users", expect=(201,), json={  # line 29598
            "active": True, "personal": {"firstName": f"FirstName_{name}", "preferredContactTypeId": "002",
                                         "lastName": f"LastName_{name}", "email": f"{name}_email@test.com"},
            "patronGroup": group, "id": user_id, "departments": []})
        okapi.post("/request-preference-storage/request-preference", expect=(201,), json={  # line 29652
            "userId": user_id, "fulfillment": "Hold Shelf", "holdShelf": True, "delivery": False,
            "defaultServicePointId": None, "defaultDeliveryAddressTypeId": None, "id": preference_id})
        okapi.post("/perms/users", params={"full": "true", "indexField": "userId"}, expect=(201,),  # line 29688
                   json={"userId": user_id, "permissions": [], "id": perms_id})
        self._user_page(user_id, created=True)

    def _search_finds(self, user: dict) -> bool:
        """PRO_SC: Users Search and the first "If user exists" (lines 31062, 31125)."""
        self.okapi.get("/users", params={"query": search_query(user["lastName"]), "limit": 100})
        if self.not_found_left and not self.as_written:
            self.not_found_left = False  # vars.remove: the next one goes on
            return False
        return True

    def _user_page(self, user_id: str, *, created: bool = False) -> None:
        """A user's page (PRO_SC: Users Choose, lines 31133-32222); after a create (lines 29724-31009) it also loads
        the custom fields before the user and the lists after the tags setting."""
        okapi = self.okapi
        okapi.get("/manualblocks", params={"query": f"(userId=={user_id})", "limit": 10000})
        okapi.get("/automated-patron-blocks/{id}", id=user_id)
        self._proxies(user_id)
        okapi.get("/service-points-users", params={"query": f"(userId=={user_id})", "limit": 10000})
        okapi.get("/service-points", params={"query": BY_NAME, "limit": 10000})
        if created:
            self._custom_fields()
        okapi.get("/users/{id}", id=user_id)
        self._user_records(user_id)
        okapi.get("/perms/users/{id}", id=user_id, params={"indexField": "userId", "full": "true"})
        okapi.get("/perms/users/{id}/permissions", id=user_id, params={"indexField": "userId", "full": "true"})
        okapi.get("/configurations/entries", params={"query": PROFILE_PICTURES})
        okapi.get("/request-preference-storage/request-preference", params={"query": f"userId=={user_id}"})
        okapi.get("/configurations/entries", params={"query": SUPPRESS_EDIT})
        okapi.get("/configurations/entries", params={"query": TAGS_ENABLED})
        if created:
            self._lists()
            okapi.get("/request-preference-storage/request-preference", params={"query": f"userId=={user_id}"})
        okapi.get("/note-links/domain/users/type/user/id/{id}", id=user_id, params={
            "limit": 100000, "orderBy": "updatedDate", "order": "desc", "status": "assigned"})
        okapi.get("/note-types", params={"query": BY_NAME, "limit": 500})
        okapi.get("/users", params={"query": f"id=={self.current_user}"})
        okapi.get("/users", params={"query": f"id=={self.current_user}"})
        self._custom_fields()
        self._label()
        okapi.get("/circulation/loans", params={"query": f"(userId=={user_id})", "limit": 1000})
        okapi.get("/circulation/loans", params={"query": f"(userId=={user_id} and status.name<>Closed)", "limit": 0})
        okapi.get("/circulation/loans", params={
            "query": f"userId=={user_id} and status.name<>Closed and action==claimedReturned", "limit": 0})
        okapi.get("/circulation/loans", params={"query": f"userId=={user_id} and status.name==Closed", "limit": 0})
        # the plan's doubled `query=` (as the UI sent it)
        okapi.get("/request-storage/requests", params={
            "query": f'query=(requesterId=={user_id}) and (status="Open")', "limit": 1})
        okapi.get("/request-storage/requests", params={
            "query": f'query=(requesterId=={user_id}) and (status="Closed")', "limit": 1})
        okapi.get("/note-links/domain/users/type/user/id/{id}", id=user_id, params={
            "limit": 10000, "order": "desc", "status": "assigned"})
        self._label()

    def _user_records(self, user_id: str) -> None:
        """The user's loans, fees and fines, and the lists naming its group, addresses and departments: the user
        page and the edit form load them alike (lines 31349-31553, 34207-34411)."""
        okapi = self.okapi
        okapi.get("/circulation/loans", params={"query": f"(userId=={user_id}) sortby id", "limit": 2000})
        okapi.get("/groups", params={"query": GROUPS, "limit": 2000})
        okapi.get("/addresstypes", params={"query": ADDRESS_TYPES, "limit": 2000})
        okapi.get("/departments", params={"query": BY_NAME, "limit": 10000})
        okapi.get("/feefineactions", params={"query": f"(userId=={user_id})", "limit": 10000})
        okapi.get("/accounts", params={"query": f"(userId=={user_id})", "limit": 10000})
        okapi.get("/circulation/loans", params={"query": f"(userId=={user_id})", "limit": 1000})

    def _view(self, user: dict) -> None:
        okapi = self.okapi
        user_id = user["id"]
        self._user_page(user_id)
        for script in SCRIPTS:  # "PRO Define flow from distribution OC" (line 32266): --loans picks the page, ...
            self.script(script)
        # ... but the open and the closed loans pages send the same calls (lines 32314, 32506)
        okapi.get("/users/{id}", id=user_id)
        okapi.get("/groups", params={"query": GROUPS, "limit": 200})
        okapi.get("/circulation/loans", params={"query": f"(userId=={user_id}) sortby id", "limit": 100000})
        okapi.get("/manualblocks", params={"query": f"(userId=={user_id})", "limit": 2000})
        okapi.get("/automated-patron-blocks/{id}", id=user_id, params={"limit": 2000})
        okapi.get("/accounts", params={"query": f"userId=={user_id}", "limit": 10000})

    def _edit(self, user: dict) -> None:
        okapi = self.okapi
        user_id = user["id"]
        self._user_page(user_id)
        self._proxies(user_id)  # PRO_SC: Load Users Edit (line 33913)
        found = okapi.get("/service-points-users", params={"query": f"(userId=={user_id})", "limit": 10000}).json()
        desks = (found.get("servicePointsUsers") or [None])[0]  # $.servicePointsUsers[0] (line 34017)
        okapi.get("/service-points", params={"query": BY_NAME, "limit": 10000})
        okapi.get("/users", params={"query": f"id=={self.current_user}"})
        self.not_found_left = True  # its extractor: `$.id` of a list, "user_not_found" (line 34086)
        self._custom_fields()
        self._label()
        record = okapi.get("/users/{id}", id=user_id).json()
        record["personal"]["email"] = NEW_EMAIL  # the JSR223 PostProcessor (line 34191)
        self._user_records(user_id)
        perms = okapi.get("/perms/users/{id}", id=user_id, params={"indexField": "userId", "full": "true"}).json()
        okapi.get("/perms/users/{id}/permissions", id=user_id, params={"indexField": "userId", "full": "true"})
        okapi.get("/configurations/entries", params={"query": PROFILE_PICTURES})
        preferences = okapi.get("/request-preference-storage/request-preference",
                                params={"query": f"userId=={user_id}"}).json()
        preference = (preferences.get("requestPreferences") or [None])[0]  # $.requestPreferences[0] (line 34593)
        okapi.get("/configurations/entries", params={"query": SUPPRESS_EDIT})
        okapi.get("/configurations/entries", params={"query": TAGS_ENABLED})
        okapi.get("/perms/permissions", params={"query": "(visible==true)", "length": 10000})
        okapi.get("/users", params={"query": f"id=={self.current_user}"})
        self._custom_fields()
        self._label(accept_any=False)  # lines 34757, 34818: no header manager of their own
        okapi.get("/perms/permissions", params={"query": "(visible==true)", "length": 10000})
        self._label(accept_any=False)
        # PRO_SC: Users Edit Save (line 34846): each PUT when the form's GET found its record
        okapi.put("/users/{id}", id=user_id, json=record, headers=SAVE, expect=(204,))
        if perms.get("id"):  # `$.id` (line 34489); the path's id read as a userId (`indexField`, line 34896)
            okapi.put("/perms/users/{id}", id=perms["id"], params={"indexField": "userId"}, json=perms, headers=SAVE,
                      expect=lambda r: r.status_code == 200 and '"userId"' in r.text)  # its JSON Assertion $.userId
        if desks is not None:
            okapi.put("/service-points-users/{id}", id=desks["id"], json=desks, headers=SAVE, expect=(204,))
        if preference is not None:
            okapi.put("/request-preference-storage/request-preference/{id}", id=preference["id"], json=preference,
                      headers=SAVE, expect=(204,))

    def _delete(self, user: dict) -> None:
        okapi = self.okapi
        user_id = user["id"]
        if not self._search_finds(user):
            self.pools.release(user, to="delete_users")  # not deleted: it stays to delete
            return
        self._user_page(user_id)
        found = okapi.get("/bl-users/by-id/{id}/open-transactions", id=user_id).json()
        if found.get("hasOpenTransactions", True) is not False:  # default "true" (line 36246)
            self.pools.release(user, to="delete_users")
            return
        okapi.delete("/bl-users/by-id/{id}", id=user_id, expect=(204,))  # line 36256
        self.pools.release(user)  # a `once` entry: dropped


def draw(data: TestData) -> dict[str, list[dict]]:
    """The dataset's users with a last name, in id order: every eighth to delete, the others to view and edit; and
    the dataset's patron groups for the users created."""
    rows = data.sql("SELECT r.id::text, r.jsonb->'personal'->>'lastName' FROM {users} r "
                    "WHERE coalesce(r.jsonb->'personal'->>'lastName', '') <> '' AND r.id BETWEEN %s AND %s "
                    "ORDER BY r.id", *data.id_range("user"))
    users = [{"id": i, "lastName": name} for i, name in rows]
    groups = data.sql("SELECT DISTINCT r.jsonb->>'patronGroup' FROM {users} r WHERE r.id BETWEEN %s AND %s "
                      "AND r.jsonb->>'patronGroup' IS NOT NULL ORDER BY 1", *data.id_range("user"))
    return {"users": [u for i, u in enumerate(users) if i % 8 != 7],
            "delete_users": [u for i, u in enumerate(users) if i % 8 == 7],
            "patron_groups": [{"id": g} for g, in groups]}


workflow = Workflow(
    name="pro",
    description="The PTF master plan's Patron Record Operations (PRO): create, view, edit (email) or delete a user in "
                "the Users app, split by --distribution (the plan's 25-25-25-25); as JMeter ran it the current user "
                "look-ups send id==1 and the iteration after an edit stops after its search (--plan as-written: the "
                "logged-in user, every user found goes on)",
    taskset=PatronRecordOperations,
    dataset="pro",
    pools={"users": "shared", "delete_users": "once", "patron_groups": "shared"},
    draw=draw,
    transactions=(CREATE, VIEW, EDIT, DELETE),
    options=(Option("distribution", default="25-25-25-25", type=distribution,
                    help="create, view, edit and delete percentages (the plan's PRO_DISTRIBUTION, line 528)"),
             Option("loans", default="50-50", type=loans_split,
                    help="a view's open and closed loans pages, percent (the plan's PRO_DISTRIBUTION_OC, line 534; "
                         "both pages send the same calls)")),
    headers=lambda options: MASTER_HEADERS,
)


class ProUser(FolioUser):
    workflow = workflow
