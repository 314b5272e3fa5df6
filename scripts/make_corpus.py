"""Write the King James Bible corpus of posenc.experiments.corpus from Debian's package.

Usage (once, by hand; needs dpkg-deb and gzip)::

    apt-get download bible-kjv-text        # in a temporary folder
    python scripts/make_corpus.py bible-kjv-text_4.38_all.deb

The package ships the text as ``usr/lib/bible.data``, the compressed data file of the
Bible Retrieval System: a header (the magic ``EC02Compressed Data File``, then at byte
0x54 the block size, 65536 bytes of text, at 0x58 the number of blocks, then that number
plus one block offsets, all 32-bit big-endian), then the blocks, each one LZW stream of
compress(1) (16-bit codes, block mode). The first block carries the stream header
``1f 9d 90``, the others do not: this script puts the header back in front of each block
and decodes it with ``gzip -dc``, which reads compress(1)'s format. Every block but the
last must decode to exactly the block size.

Writes into ``src/posenc/experiments/kjv/``: ``kjv.txt.xz`` (the decoded text, byte for
byte, xz preset 9e), ``copyright`` (the package's copyright file, unchanged) and the
``source`` entry of ``corpus.json`` (package, version, file hashes, sizes). Normalising
the text and the split are :mod:`posenc.experiments.corpus`'s, at load time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "posenc" / "experiments" / "kjv"
DATA_FILE = "usr/lib/bible.data"
COPYRIGHT_FILE = "usr/share/doc/bible-kjv-text/copyright"
MAGIC = b"EC02Compressed Data File"
LZW_HEADER = b"\x1f\x9d\x90"  # compress(1): magic 1f 9d, block mode with 16-bit codes


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def block_offsets(data: bytes) -> tuple[int, list[int]]:
    """(block size, offsets of the blocks and of the end) from the header."""
    if not data.startswith(MAGIC):
        raise ValueError(f"not a BRS compressed data file: starts {data[:24]!r}")
    block_size, count = struct.unpack(">II", data[0x54:0x5C])
    offsets = list(struct.unpack(f">{count + 1}I", data[0x5C : 0x5C + 4 * (count + 1)]))
    if offsets[-1] != len(data) or data[offsets[0] - 3 : offsets[0]] != LZW_HEADER:
        raise ValueError("block offsets do not match the file")
    return block_size, offsets


def decode(data: bytes) -> bytes:
    """The text of a BRS data file: every block decoded by gzip -dc, concatenated."""
    block_size, offsets = block_offsets(data)
    parts = []
    for start, end in zip(offsets[:-1], offsets[1:]):
        out = subprocess.run(
            ["gzip", "-dc"], input=LZW_HEADER + data[start:end], capture_output=True
        )
        if out.returncode != 0:
            raise ValueError(f"block at {start} does not decode: {out.stderr!r}")
        parts.append(out.stdout)
    if any(len(part) != block_size for part in parts[:-1]) or not parts[-1]:
        raise ValueError("a block decoded to the wrong size")
    return b"".join(parts)


def package_field(deb: Path, field: str) -> str:
    return subprocess.run(
        ["dpkg-deb", "-f", str(deb), field], capture_output=True, check=True, text=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("deb", type=Path, help="the bible-kjv-text .deb file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(args.deb), tmp], check=True)
        data = (Path(tmp) / DATA_FILE).read_bytes()
        shutil.copyfile(Path(tmp) / COPYRIGHT_FILE, OUT / "copyright")
    text = decode(data)
    (OUT / "kjv.txt.xz").write_bytes(
        lzma.compress(text, preset=9 | lzma.PRESET_EXTREME)
    )
    manifest_path = OUT / "corpus.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest["source"] = {
        "package": package_field(args.deb, "Package"),
        "source_package": package_field(args.deb, "Source"),
        "version": package_field(args.deb, "Version"),
        "deb_sha256": sha256(args.deb.read_bytes()),
        "file": DATA_FILE,
        "file_sha256": sha256(data),
        "file_bytes": len(data),
        "copyright_file": COPYRIGHT_FILE,
        "text_sha256": sha256(text),
        "text_bytes": len(text),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"{len(text)} bytes, sha256 {sha256(text)}")


if __name__ == "__main__":
    main()
