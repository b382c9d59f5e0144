"""One package reference: tenant + package id, and every key derived from the pair.

The pair used to travel as two loose strings through the handler, the use cases and the log store,
each building its own ``tenant#package`` key. Build a :class:`PackageRef` once at the use-case boundary
and derive keys from it, so the partition key, the chain name and the checkpoint origin cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PackageRef:
    tenant: str
    package: str

    @property
    def pk(self) -> str:
        """DynamoDB partition key of the package in every table (records, receipts, heads, jobs)."""
        return f"{self.tenant}#{self.package}"

    @property
    def chain_key(self) -> str:
        """The chain name bound into every log entry (an entry cannot move to another chain)."""
        return f"{self.tenant}/{self.package}"

    def origin(self, publisher_id: str) -> str:
        """Checkpoint origin line: binds a checkpoint to one publisher, tenant and package."""
        return f"{publisher_id}/{self.tenant}/{self.package}"

    def prefix(self, kind: str) -> str:
        """S3 key prefix of the package's objects of one kind (``bundles``, ``cartridges``...)."""
        return f"{kind}/{self.tenant}/{self.package}/"

    @classmethod
    def from_pk(cls, pk: str) -> PackageRef:
        tenant, _, package = pk.partition("#")
        return cls(tenant, package)
