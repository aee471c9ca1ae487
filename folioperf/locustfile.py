"""The locustfile folioperf runs: `locust -f <path of this file> --workflow NAME|FILE --host OKAPI_URL ...`, or
with `--scenario FILE` (and `--users-scale F`) a user class per group of the scenario.

Its one user class runs the workflow chosen with --workflow (a registered name or a .py file); every
folioperf option can also come from locust.conf or FOLIOPERF_* environment variables. Workflow files
define their own user class and run with `locust -f workflows/<file>.py` just as well.
"""

from folioperf.plugin import FolioUser, scenario_users

_GROUPS = scenario_users()
globals().update(_GROUPS)

if not _GROUPS:
    class WorkflowUser(FolioUser):
        """Runs the workflow named by --workflow."""
