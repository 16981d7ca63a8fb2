#!/usr/bin/env python3
"""Builds the pip wheel of the release binary, offline (scripts/release.sh):

    wheel.py BINARY VERSION MANPAGE OUTDIR

writes OUTDIR/aml_shim-<version>-py3-none-manylinux2014_x86_64.whl, which
`pip install` turns into <prefix>/bin/aml-shim and
<prefix>/share/man/man1/aml-shim.1 (as ninja's, cmake's and ruff's wheels
ship their binaries). manylinux2014 promises GLIBC_2.17 at most, which the
release checks. <version> is release.sh's, made PEP 440 ("+dirty" becomes
".dirty" in the local part). Standard library only."""
import base64
import hashlib
import os
import re
import sys
import zipfile

TAG = "py3-none-manylinux2014_x86_64"


def pep440(version):
    public, _, local = version.partition("+")
    local = local.replace("+", ".")
    if not re.fullmatch(r"\d+(\.\d+)*", public) or (local and not re.fullmatch(r"[A-Za-z0-9.]+", local)):
        raise SystemExit(f"wheel: version {version!r} is not PEP 440 (N.N.N or N.N.N+local)")
    return public + ("+" + local if local else "")


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main(binary, version, manpage, outdir):
    version = pep440(version)
    dist = f"aml_shim-{version}"
    with open(binary, "rb") as f:
        exe = f.read()
    with open(manpage, "rb") as f:
        man = f.read()
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: aml-shim\n"
        f"Version: {version}\n"
        "Summary: Runs any distributed PyTorch script under mpirun, srun or as a container "
        "entrypoint, unchanged\n"
        "Requires-Python: >=3\n"
        "Description-Content-Type: text/plain\n"
        "\n"
        "The aml-shim binary (static C++ runtime, GLIBC_2.17 or newer), installed on PATH.\n"
        "See `man aml-shim` and the project's README.\n").encode()
    wheel = ("Wheel-Version: 1.0\n"
             "Generator: aml-shim scripts/wheel.py\n"
             "Root-Is-Purelib: false\n"
             f"Tag: {TAG}\n").encode()
    files = [
        (f"{dist}.data/scripts/aml-shim", exe, 0o755),
        (f"{dist}.data/data/share/man/man1/aml-shim.1", man, 0o644),
        (f"{dist}.dist-info/METADATA", metadata, 0o644),
        (f"{dist}.dist-info/WHEEL", wheel, 0o644),
    ]
    record = "\n".join([record_line(n, d) for n, d, _ in files] +
                       [f"{dist}.dist-info/RECORD,,"]) + "\n"
    files.append((f"{dist}.dist-info/RECORD", record.encode(), 0o644))
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, f"{dist}-{TAG}.whl")
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16  # a regular file, its mode
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit("usage: wheel.py BINARY VERSION MANPAGE OUTDIR")
    main(*sys.argv[1:])
