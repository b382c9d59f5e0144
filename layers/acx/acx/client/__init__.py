"""The acx client library: plain words to ACX records (:mod:`acx.client.records`) and the
:class:`~acx.client.memory.Memory` client the CLI, the MCP server and Python programs share."""
