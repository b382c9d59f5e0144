"""The service models botocore builds clients from, parsed by orjson (``acx.adapters.service_models``):
the same data, in the same key order, as botocore's own loader gives, and the service's clients use it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from botocore.loaders import JSONFileLoader, Loader

from acx.adapters import aws
from acx.adapters.service_models import OrjsonFileLoader, ServiceModelLoader, install

# Every service acx.adapters.aws makes a client for (deps, search's Bedrock engine, the functions).
SERVICES = ("s3", "dynamodb", "kms", "sqs", "sns", "bedrock-runtime")


def _stock() -> Loader:
    return Loader(file_loader=JSONFileLoader())


def _fast() -> Loader:
    return ServiceModelLoader(file_loader=OrjsonFileLoader())


def _ordered(value: Any) -> str:
    return json.dumps(value)  # no sort_keys: equal strings mean equal values in the same key order


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("type_name", ["service-2", "endpoint-rule-set-1"])
def test_a_service_model_is_the_same_data_in_the_same_order(service: str, type_name: str) -> None:
    stock = _stock().load_service_model(service, type_name)
    fast = _fast().load_service_model(service, type_name)
    assert fast == stock
    assert _ordered(fast) == _ordered(stock)


@pytest.mark.parametrize("name", ["endpoints", "partitions", "sdk-default-configuration", "_retry"])
def test_the_shared_tables_are_the_same(name: str) -> None:
    stock, fast = _stock().load_data(name), _fast().load_data(name)
    assert fast == stock and _ordered(fast) == _ordered(stock)


def test_a_file_orjson_refuses_is_parsed_as_botocore_parses_it(tmp_path: Path) -> None:
    # orjson stops at 64-bit integers; the standard library does not: botocore's answer is kept.
    doc = '{"b": 1, "a": {"max": 123456789012345678901234567890}}'
    (tmp_path / "big.json").write_text(doc)
    with gzip.open(tmp_path / "zipped.json.gz", "wt") as f:
        f.write('{"z": 2, "y": [1.5, "x"]}')
    fast, stock = OrjsonFileLoader(), JSONFileLoader()
    assert fast.load_file(str(tmp_path / "big")) == stock.load_file(str(tmp_path / "big"))
    assert fast.load_file(str(tmp_path / "big"))["a"]["max"] == 123456789012345678901234567890
    zipped = str(tmp_path / "zipped")
    assert _ordered(fast.load_file(zipped)) == _ordered(stock.load_file(zipped))
    assert fast.load_file(str(tmp_path / "missing")) is None


def test_the_service_clients_are_built_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    aws.reset()
    try:
        s3 = aws.client("s3")
        session = aws.session()
        assert isinstance(session.get_component("data_loader"), ServiceModelLoader)
        assert s3.meta.service_model.service_name == "s3"
        assert "GetObject" in s3.meta.service_model.operation_names
    finally:
        aws.reset()


def test_install_is_idempotent() -> None:
    session = aws.session()
    install(session)
    first = session.get_component("data_loader").file_loader
    install(session)
    assert session.get_component("data_loader").file_loader is first


@pytest.mark.parametrize(
    "type_name", ["service-2", "endpoint-rule-set-1", "paginators-1", "waiters-2", "nope-1"]
)
def test_the_services_listed_are_botocores(type_name: str) -> None:
    fast = _fast()
    assert fast.list_available_services(type_name) == _stock().list_available_services(type_name)
    assert fast.list_available_services(type_name) is fast.list_available_services(type_name)  # cached


def test_the_listing_of_a_tree_with_odd_entries_is_botocores(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for path in (
        first / "svc-one" / "2020-01-01" / "service-2.json",
        first / "svc-two" / "2021-01-01" / "paginators-1.json",
        first / "svc-gz" / "2022-01-01" / "service-2.json.gz",
        second / "svc-two" / "2023-01-01" / "service-2.json",  # the same service in another path
        second / "svc-odd" / "2020-01-01" / "service-2.json" / "not-a-file",  # a directory
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.name == "not-a-file":
            path.mkdir()
        else:
            path.write_bytes(b"{}")
    (first / "svc-flat").mkdir()
    (first / "svc-flat" / "service-2.json").write_bytes(b"{}")  # no version directory
    (first / "a-file").write_bytes(b"")
    paths = [str(first), str(second), str(tmp_path / "missing")]
    stock = Loader(extra_search_paths=paths, include_default_search_paths=False)
    fast = ServiceModelLoader(extra_search_paths=paths, include_default_search_paths=False)
    for type_name in ("service-2", "paginators-1", "waiters-2"):
        assert fast.list_available_services(type_name) == stock.list_available_services(type_name)
    assert fast.list_available_services("service-2") == ["svc-gz", "svc-one", "svc-two"]


def test_install_keeps_the_search_paths_and_a_client_still_refuses_an_unknown_service() -> None:
    from botocore.exceptions import UnknownServiceError
    from botocore.session import Session

    session = Session()
    before = list(session.get_component("data_loader").search_paths)
    install(session)
    loader = session.get_component("data_loader")
    assert isinstance(loader, ServiceModelLoader) and isinstance(loader.file_loader, OrjsonFileLoader)
    assert loader.search_paths == before
    with pytest.raises(UnknownServiceError):
        session.create_client("no-such-service", region_name="eu-west-1")
    ddb = session.create_client(
        "dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    assert (
        ddb.meta.service_model.operation_model("Query").input_shape.members["TableName"].type_name == "string"
    )


def test_a_botocore_without_the_private_hooks_keeps_its_own_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lambda's runtime botocore is not the pinned one: if it lacks the methods these classes override,
    install leaves botocore's loader in place (slower, never broken)."""
    import botocore.session

    from acx.adapters import service_models

    monkeypatch.setattr(service_models, "_HOOKS_PRESENT", False)
    session = botocore.session.get_session()
    before = session.get_component("data_loader")
    service_models.install(session)
    assert session.get_component("data_loader") is before
    assert not isinstance(before, service_models.ServiceModelLoader)
    assert service_models._HOOKS_PRESENT is False
    monkeypatch.undo()
    assert service_models._HOOKS_PRESENT is True  # the pinned botocore has both


@pytest.mark.parametrize("type_name", ["service-2", "endpoint-rule-set-1", "waiters-2"])
def test_the_one_service_check_agrees_with_botocores_listing(type_name: str) -> None:
    stock, fast = _stock(), _fast()
    listed = set(stock.list_available_services(type_name))
    odd = ["", ".", "..", "S3", "s3/", "../botocore", "s3/../dynamodb", "no-such-service", "dynamodb "]
    for name in sorted(set(stock.list_available_services("service-2")) | set(odd)):
        assert fast._offers(name, type_name) == (name in listed), name


def test_loading_a_model_does_not_list_every_service(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import UnknownServiceError

    fast = _fast()

    def walked() -> None:
        raise AssertionError("listed every service")

    monkeypatch.setattr(fast, "_service_files", walked)
    model = fast.load_service_model("dynamodb", "service-2")
    assert model == _stock().load_service_model("dynamodb", "service-2")
    assert fast.load_service_model("s3", "endpoint-rule-set-1")["version"]
    monkeypatch.undo()
    with pytest.raises(UnknownServiceError) as fast_error:
        fast.load_service_model("no-such-service", "service-2")
    with pytest.raises(UnknownServiceError) as stock_error:
        _stock().load_service_model("no-such-service", "service-2")
    assert str(fast_error.value) == str(stock_error.value)
    assert fast.list_available_services("service-2") == _stock().list_available_services("service-2")
