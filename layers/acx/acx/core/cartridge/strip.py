"""Strip-to-ROM (ACX v0.1 §4): drop the SAVE zone and prove the ROM manifest hash is unchanged."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from pathlib import Path

from acx.core.cartridge.format import FLAG_SAVE, SAVE_META, CartridgeError
from acx.core.cartridge.reader import CartridgeReader


def strip_to_rom(src: str | Path, dst: str | Path) -> tuple[str, str]:
    """Copy ``src`` to ``dst`` without the SAVE zone; return (manifest hash before, after), recomputed.

    Deletes SAVE rows from memory, sqlar, vectors and objects, the SAVE meta and the flag bit, then
    VACUUMs (so deleted SAVE bytes do not linger in free pages). The two hashes are equal for any
    cartridge whose signature covers only ROM, which is the point: the signature still verifies.
    """
    src, dst = Path(src), Path(dst)
    with CartridgeReader(src) as reader:
        before = reader.manifest_hash()
    tmp = dst.with_name(dst.name + ".partial")
    try:
        shutil.copyfile(src, tmp)
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("BEGIN")
            db.execute("DELETE FROM memory WHERE zone = 'save'")
            db.execute("DELETE FROM sqlar WHERE name LIKE 'save/%'")
            db.execute("DELETE FROM vectors WHERE zone = 'save'")
            db.execute("DELETE FROM objects WHERE zone = 'save'")
            db.execute("DELETE FROM acx_skill WHERE sqlar_path LIKE 'save/%'")
            db.executemany("DELETE FROM cartridge WHERE key = ?", [(k,) for k in SAVE_META])
            version = db.execute("PRAGMA user_version").fetchone()[0]
            db.execute(f"PRAGMA user_version = {int(version) & ~FLAG_SAVE}")
            db.execute("COMMIT")
            db.execute("VACUUM")
        finally:
            db.close()
        os.replace(tmp, dst)
    except sqlite3.Error as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise CartridgeError(f"cannot strip cartridge ({exc})") from None
    with CartridgeReader(dst) as reader:
        after = reader.manifest_hash()
    return before, after
