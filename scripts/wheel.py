#!/usr/bin/env python3
"""Builds the pip wheel of the release binary, offline (scripts/release.sh):

    wheel.py BINARY VERSION MANPAGE OUTDIR

writes OUTDIR/aml_shim-<version>-py3-none-<platform>.whl, which `pip
install` turns into <prefix>/bin/aml-shim and
<prefix>/share/man/man1/aml-shim.1 (as ninja's, cmake's and ruff's wheels
ship their binaries). The platform tag says the newest glibc the binary
needs (its GLIBC_ symbol versions, read with objdump): manylinux2014 for
GLIBC_2.17 at most (the release, checked there), else manylinux_2_NN (a
local build: Debian 12's needs 2.34 or so, and pip installs it only on a
glibc at least as new). <version> is release.sh's, made PEP 440 ("+dirty"
becomes ".dirty" in the local part). Standard library and objdump only."""
import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

def needed_glibc(binary):
    """The newest GLIBC_x.y version the binary's dynamic symbols need."""
    out = subprocess.run(["objdump", "-T", binary], capture_output=True, text=True, check=True)
    found = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_(\d+\.\d+)", out.stdout)}
    return max(found, default=(2, 17))


def platform_tag(glibc):
    if glibc <= (2, 17):
        return "py3-none-manylinux2014_x86_64"
    return f"py3-none-manylinux_{glibc[0]}_{glibc[1]}_x86_64"


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
    glibc = needed_glibc(binary)
    TAG = platform_tag(glibc)
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
        f"The aml-shim binary (static C++ runtime, GLIBC_{glibc[0]}.{glibc[1]} or newer), "
        "installed on PATH.\n"
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
