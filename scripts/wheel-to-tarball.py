#!/usr/bin/env python3
"""Turns a koas wheel into the tarball of a GitHub Release.

    scripts/wheel-to-tarball.py WHEEL OUT.tar.gz

The wheel already holds the installed layout (its .data folder: scripts/koas,
data/lib/koas/kernels, data/share/koas/prompts); the tarball holds the same
files as bin/koas, lib/koas/kernels/ and share/koas/prompts/ under one
folder named after OUT, to unpack anywhere and put its bin on PATH.
"""

import io
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath


def main(wheel: str, out: str) -> int:
    top = Path(out).name.removesuffix(".tar.gz")
    placed = 0
    with zipfile.ZipFile(wheel) as whl, tarfile.open(out, "w:gz") as tar:
        for info in whl.infolist():
            parts = PurePosixPath(info.filename).parts
            # koas-VERSION.data/{scripts,data}/...
            if len(parts) < 3 or not parts[0].endswith(".data"):
                continue
            if parts[1] == "scripts":
                rel = PurePosixPath("bin", *parts[2:])
            elif parts[1] == "data":
                rel = PurePosixPath(*parts[2:])
            else:
                continue
            data = whl.read(info)
            entry = tarfile.TarInfo(str(PurePosixPath(top) / rel))
            entry.size = len(data)
            # Executables keep their mode (zip keeps it in the high bits).
            mode = (info.external_attr >> 16) & 0o777
            entry.mode = mode or 0o644
            tar.addfile(entry, io.BytesIO(data))
            placed += 1
    if placed == 0:
        print(f"{wheel}: no .data folder: not a koas wheel", file=sys.stderr)
        return 1
    print(f"{out}: {placed} files")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
