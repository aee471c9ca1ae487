"""The server side of a run: FOLIO modules' CPU and memory, the database's CPU and connections, the hosts' CPU,
from the built-in sandbox, a Prometheus or AWS CloudWatch (`--server-metrics`), into the results directory."""
