"""botocore's service models (the JSON files a client is built from): parsed with orjson, listed once.

Why: creating a boto3 client loads its service model, its endpoint rule set and, once per process,
botocore's endpoint and partition tables: JSON files of up to a few MB, which botocore parses with the
standard library into ``OrderedDict`` objects (``object_pairs_hook``). That parse was the largest
part of a cold search's client creation (S3 + DynamoDB: about 0.08 s of CPU of 0.15 s, py-spy of
bench search's cold child at 100k). orjson builds the same data (plain dicts keep the file's key
order, which is all botocore needs: its model classes copy members into their own ordered maps)
in a fraction of that. The same files, the same search paths, the same values: only the parser
differs. orjson reads an integer past 64 bits as a float (the standard library keeps it exact), so a
file with a run of 19 or more digits anywhere, or one orjson refuses, is parsed as botocore would.

Before loading a model, botocore's ``Loader`` checks the service's name against a list of every
service in its search paths (445 directories), walked again for each kind of file (the model, then
the endpoint rule set): about 0.04 s of CPU per process. ``ServiceModelLoader`` answers that check
from the one service's own directories (the same verdict: tested for every service botocore lists
and for names it does not), and walks the whole tree only for a caller that wants the list (once,
for every kind of file; the same list as botocore's).

What it does NOT do: cache anything across processes, skip a file or a check, or change which model a
client gets: the same ``Loader`` with botocore's extension points (its ``file_loader``, and the
session's ``data_loader`` component).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from typing import Any

import orjson
from botocore import loaders
from botocore.loaders import JSONFileLoader, Loader, instance_cache

# The file endings botocore's JSONFileLoader tries, in its order (".json", ".json.gz").
_ENDINGS = tuple(getattr(loaders, "_JSON_OPEN_METHODS", None) or (".json", ".json.gz"))

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


class ServiceModelLoader(Loader):
    """botocore's ``Loader``, listing its search paths' services once for every kind of file, and
    only when a caller wants the list: loading a model checks its one service."""

    _files: dict[str, set[str]] | None = None

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        """botocore's (the same model, extras and caching), with its "is this a known service" check
        answered by looking at this one service's directories instead of listing all 445 (~0.015 s
        of CPU at a cold start). A name that check does not find goes through botocore's listing,
        check and ``UnknownServiceError`` unchanged."""
        if not self._offers(service_name, type_name):
            return super().load_service_model(service_name, type_name, api_version)
        asking = self._asking()
        asking.known = (service_name, type_name)
        try:
            return super().load_service_model(service_name, type_name, api_version)
        finally:
            asking.known = None

    def list_available_services(self, type_name: str) -> list[str]:
        known = getattr(self._asking(), "known", None)
        if known is not None and known[1] == type_name:
            return [known[0]]  # botocore's membership check of the service being loaded
        return self._listing(type_name)  # type: ignore[no-any-return]

    def _asking(self) -> threading.local:
        """Per thread: the (service, type) ``load_service_model`` is loading (clients may be made
        from several threads at once)."""
        return self.__dict__.setdefault("_asking_local", threading.local())  # type: ignore[no-any-return]

    def _offers(self, service_name: str, type_name: str) -> bool:
        """``service_name in list_available_services(type_name)``, looking at that service alone."""
        for location in self._potential_locations():
            if service_name not in os.listdir(location):  # the exact name, as botocore's listing has it
                continue
            service_dir = os.path.join(location, service_name)
            if not os.path.isdir(service_dir):
                continue
            for version in os.listdir(service_dir):
                if self.file_loader.exists(os.path.join(service_dir, version, type_name)):
                    return True
        return False

    @instance_cache
    def _listing(self, type_name: str) -> list[str]:
        """What botocore's lists: each service with a file ``type_name`` + a JSON ending in one of
        its API version directories, in any search path; sorted."""
        wanted = {type_name + ending for ending in _ENDINGS}
        return sorted(name for name, files in self._service_files().items() if files & wanted)

    def _service_files(self) -> dict[str, set[str]]:
        """Service name -> names of the files in its API version directories (every search path)."""
        if self._files is None:
            found: dict[str, set[str]] = {}
            for location in self._potential_locations():
                with os.scandir(location) as services:
                    for service in services:
                        if not service.is_dir():
                            continue
                        files = found.setdefault(service.name, set())
                        with os.scandir(service.path) as versions:
                            for version in versions:
                                if version.is_dir():
                                    with os.scandir(version.path) as entries:
                                        files.update(e.name for e in entries if e.is_file())
            self._files = found
        return self._files


# Lambda's runtime brings its own botocore (the layer does not ship one): both classes lean on private
# methods of it, so when a botocore lacks them botocore's own loader is kept (only slower).
_HOOKS_PRESENT = callable(getattr(Loader, "_potential_locations", None)) and callable(
    getattr(JSONFileLoader, "_load_file", None)
)


def install(botocore_session: Any) -> None:
    """Make ``botocore_session``'s data loader a ``ServiceModelLoader`` with orjson's parse, over the
    same search paths (idempotent; only what is loaded after this is loaded by it)."""
    loader = botocore_session.get_component("data_loader")
    if isinstance(loader, ServiceModelLoader) or not _HOOKS_PRESENT:
        return
    fast = ServiceModelLoader(
        extra_search_paths=list(loader.search_paths),
        file_loader=OrjsonFileLoader(),
        include_default_search_paths=False,
    )
    botocore_session.register_component("data_loader", fast)
