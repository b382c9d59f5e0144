"""botocore's service models (the JSON files a client is built from), parsed with orjson.

Why: creating a boto3 client loads its service model, its endpoint rule set and, once per process,
botocore's endpoint and partition tables: JSON files of up to a few MB, which botocore parses with the
standard library into ``OrderedDict`` objects (``object_pairs_hook``). That parse was the largest
part of a cold search's client creation (S3 + DynamoDB: about 0.08 s of CPU of 0.15 s, py-spy of
bench search's cold child at 100k). orjson builds the same data (plain dicts keep the file's key
order, which is all botocore needs: its model classes copy members into their own ordered maps)
in a fraction of that. The same files, the same search paths, the same values: only the parser
differs. orjson reads an integer past 64 bits as a float (the standard library keeps it exact), so a
file with a run of 19 or more digits anywhere, or one orjson refuses, is parsed as botocore would.

What it does NOT do: cache anything across processes, skip a file, or change which model a client
gets; it is the loader's ``file_loader``, the extension point botocore's own ``Loader`` takes.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import Any

import orjson
from botocore.loaders import JSONFileLoader

# 18 digits always fit in 64 bits; a longer run (even inside a string) sends the file to json. Found
# by one C-level translate (digits to "0", the rest to " ") and a substring search: ~3 ms per MB,
# where a regex took ~20.
_DIGITS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_LONG_RUN = b"0" * 19


class OrjsonFileLoader(JSONFileLoader):
    """botocore's ``JSONFileLoader`` (``.json`` and ``.json.gz``, same lookups) with orjson's parse."""

    def _load_file(self, full_path: str, open_method: Any) -> Any:
        if not os.path.isfile(full_path):
            return None
        with open_method(full_path, "rb") as fp:
            payload = fp.read()
        if _LONG_RUN not in payload.translate(_DIGITS):
            try:
                return orjson.loads(payload)
            except orjson.JSONDecodeError:
                pass  # botocore's parser decides (and raises what it raises)
        return json.loads(payload.decode("utf-8"), object_pairs_hook=OrderedDict)


def install(botocore_session: Any) -> None:
    """Make ``botocore_session``'s data loader parse with orjson (idempotent; files loaded before
    stay cached as they were)."""
    loader = botocore_session.get_component("data_loader")
    if not isinstance(loader.file_loader, OrjsonFileLoader):
        loader.file_loader = OrjsonFileLoader()
