"""Outside agents: a query's world over MCP (session.py: the query's functions, each call a run's environment step,
closed into the run's answer file; mcp_host.py: the MCP server on the official SDK, streamable HTTP and stdio),
an agent's process (process.py) and how a query is driven by one (drive.py: tba run --agent CMD, tba serve-tools).
Below execution/ (a run's QueryRunner hands a query to the driver), above config/ and search/ (the chain and the
answer file are search/'s)."""
