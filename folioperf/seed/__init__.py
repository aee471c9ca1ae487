"""Datasets and seeding: `folioperf seed`, `folioperf reset` and `folioperf pools`.

- `dataset`: dataset specs (`datasets/*.toml`, `dataset.schema.json`) — loading, validation, scaling.
- `ids`: the deterministic ids, barcodes and HRIDs of a dataset's records.
- `generate`: FOLIO-shaped records as COPY rows, made in a process of its own.
- `vocabulary`: the words records are made of, drawn from Faker once and kept in folioperf's cache.
- `layout`: what the tenant's database holds (schemas, tables, columns, triggers) and how to load each table.
- `reference`: the reference records a dataset uses, found or added in the tenant.
- `load`: the COPY pipeline (generator process → buffer → COPY, index rebuilds, progress).
- `marker`: which dataset was seeded where, at which scale.
- `seeding`, `cleanup`, `reset`: `seed` and `reset` in one transaction each.
- `datapools`, `okapi_reader`: `pools` from the database or through the APIs.

The sub-commands' arguments and handlers are folioperf/data_cli.py and folioperf/data_commands.py. FOLIO's
table layout comes from folioperf/folio_layout.py: this package never imports the sandbox.
"""
