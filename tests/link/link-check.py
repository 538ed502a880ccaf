#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a program that links libaisb sees of it (tests/link/meson.build runs each check).

  exports static|shared NM SYMFILE LIBRARY
      The library defines, as global symbols, exactly the names of lib/libaisb.sym: the
      static archive too, where -fvisibility=hidden alone hides nothing.
  clash PKG_CONFIG PCDIR INCLUDEDIR READELF ARCHIVE SOURCE -- CC...
      Build SOURCE (a program with names of libaisb's internals of its own) against ARCHIVE
      as an embedder would, with `pkg-config --static` and the aisb.pc meson installs, and
      run it.
"""
import os
import re
import subprocess
import sys
import tempfile


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def api_names(symfile):
    """The names in the global: sections of a linker version script."""
    names = set()
    section = None
    with open(symfile, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line in ("global:", "local:"):
                section = line
                continue
            match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", line)
            if match and section == "global:":
                names.add(match.group(1))
    if not names:
        fail(f"{symfile} names no symbol")
    return names


def exports(kind, nm, symfile, library):
    expected = api_names(symfile)
    command = [nm, "--defined-only"] + (["-D"] if kind == "shared" else ["-g"]) + [library]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{' '.join(command)}: {result.stderr.strip()}")
    defined = set()
    for line in result.stdout.splitlines():
        fields = line.split()
        # "ADDRESS TYPE NAME"; archive member headers ("x.o:") and blank lines have fewer.
        if len(fields) != 3:
            continue
        _, symbol_type, name = fields
        # The shared library's version nodes (AISB_0.1, ...) are absolute symbols, not code.
        if kind == "shared" and symbol_type == "A":
            continue
        defined.add(name.split("@")[0])
    extra = sorted(defined - expected)
    missing = sorted(expected - defined)
    print(f"{library}: {len(defined)} global names defined, {len(expected)} in {symfile}")
    if extra:
        fail(f"{len(extra)} global names that are not API (a program defining one of them "
             f"cannot link, or gets the library's): {' '.join(extra)}")
    if missing:
        fail(f"API names the library does not define: {' '.join(missing)}")
    print(f"ok: {kind}: exactly the API is global")


def clash(pkg_config, pcdir, includedir, readelf, archive, source, cc):
    with tempfile.TemporaryDirectory(prefix="aisb-link-") as tmp:
        # A libdir with the archive alone, as an install of the static library leaves it.
        libdir = os.path.join(tmp, "lib")
        os.mkdir(libdir)
        os.symlink(os.path.abspath(archive), os.path.join(libdir, "libaisb.a"))
        # aisb.pc as meson installs it, its directories moved to these (a --define-variable
        # would move libcurl's and json-c's as well).
        pkgconfig = os.path.join(tmp, "pkgconfig")
        os.mkdir(pkgconfig)
        with open(os.path.join(pcdir, "aisb.pc"), encoding="utf-8") as f:
            pc = f.read()
        pc = re.sub(r"(?m)^libdir=.*$", lambda _: "libdir=" + libdir, pc)
        pc = re.sub(r"(?m)^includedir=.*$", lambda _: "includedir=" + includedir, pc)
        with open(os.path.join(pkgconfig, "aisb.pc"), "w", encoding="utf-8") as f:
            f.write(pc)
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = pkgconfig + (":" + env["PKG_CONFIG_PATH"]
                                              if env.get("PKG_CONFIG_PATH") else "")
        env.pop("PKG_CONFIG_SYSROOT_DIR", None)
        command = [pkg_config, "--static", "--cflags", "--libs", "aisb"]
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            fail(f"{' '.join(command)}: {result.stderr.strip()}")
        flags = result.stdout.split()
        print("pkg-config --static: " + " ".join(flags))
        for needed in ("-laisb", "-lcurl", "-ljson-c", "-lnettle", "-pthread"):
            if needed not in flags:
                fail(f"aisb.pc does not give {needed} to a static link")
        # libarchive is dlopen()ed when an image is built; linked, it would load at each start.
        if "-larchive" in flags:
            fail("aisb.pc links libarchive, which libaisb only loads when it builds an image")
        program = os.path.join(tmp, "clash")
        command = cc + ["-std=c99", "-Wall", "-Wextra", "-Werror", "-o", program, source] + flags
        result = subprocess.run(command, capture_output=True, text=True)
        # pkg-config --static also lists what a static libcurl needs (its .pc's Libs.private:
        # nghttp2, ssh2, ldap, ...), whose -dev packages a host may well lack; that is
        # libcurl's affair. Those, and only those, are left out, and the program links
        # against the shared libcurl: aisb.pc's own entries must all be found.
        missing = set(re.findall(r"(?:cannot find|unable to find library) (-l[^\s:]+)",
                                 result.stderr))
        if result.returncode != 0 and missing and not missing & {
                "-laisb", "-lcurl", "-ljson-c", "-lnettle", "-lm", "-ldl", "-lpthread"}:
            print("not on this host, for a static libcurl (left out): " + " ".join(sorted(missing)))
            command = [arg for arg in command if arg not in missing]
            result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            fail("the program does not link against the archive:\n" + result.stderr)
        dynamic = subprocess.run([readelf, "-dW", program], capture_output=True, text=True,
                                 check=True).stdout
        if "libaisb" in dynamic:
            fail("the program needs libaisb.so: it was linked against the wrong library")
        # The library reads its policy defaults from the environment and the home.
        run_env = {k: v for k, v in os.environ.items() if not k.startswith("AISB_")}
        run_env["HOME"] = tmp
        run_env["XDG_CONFIG_HOME"] = os.path.join(tmp, "config")
        result = subprocess.run([program], capture_output=True, text=True, cwd=tmp, env=run_env)
        sys.stdout.write(result.stdout)
        sys.stdout.write(result.stderr)
        if result.returncode != 0:
            fail(f"the program linked against the archive exited {result.returncode}")
    print("ok: a program with names of libaisb's internals links libaisb.a and runs")


def main(argv):
    if len(argv) == 5 and argv[0] == "exports" and argv[1] in ("static", "shared"):
        exports(*argv[1:])
    elif len(argv) > 8 and argv[0] == "clash" and argv[7] == "--":
        clash(*argv[1:7], cc=argv[8:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
