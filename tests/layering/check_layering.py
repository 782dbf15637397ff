#!/usr/bin/env python3
"""Builds the layering probes (tests/layering/CMakeLists.txt) in one run of the build tool and
checks each outcome: a forbidden probe fails on its include, an allowed one compiles."""
import argparse
import subprocess
import sys


def parse_probes(values):
    probes = []
    for value in values or []:
        target, header = value.split("=", 1)
        probes.append((target, header))
    return probes


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--forbidden", action="append", help="TARGET=HEADER that must not compile")
    parser.add_argument("--allowed", action="append", help="TARGET=HEADER that must compile")
    args = parser.parse_args()
    forbidden = parse_probes(args.forbidden)
    allowed = parse_probes(args.allowed)
    if not forbidden or not allowed:
        parser.error("needs at least one forbidden and one allowed probe")

    targets = [t for t, _ in forbidden + allowed]
    # Keep going past failures (they are the point); one job, so that the output of each
    # compiler run stays in one piece.
    keep_going = ["-k", "0"]
    with open(f"{args.build_dir}/CMakeCache.txt", encoding="utf-8") as cache:
        if "CMAKE_GENERATOR:INTERNAL=Ninja" not in cache.read():
            keep_going = ["-k"]
    run = subprocess.run(
        ["cmake", "--build", args.build_dir, "-j1", "--target", *targets, "--", *keep_going],
        capture_output=True, text=True, timeout=280)
    output = run.stdout + run.stderr

    failures = []
    for target, header in forbidden:
        # gcc and clang say it their own way.
        expected = (f"{header}: No such file or directory", f"'{header}' file not found")
        # The compiler names the probe's source in its error, so a failure is tied to its probe.
        lines = [line for line in output.splitlines() if f"{target}.cc" in line]
        if not any(e in line for line in lines for e in expected):
            failures.append(f"{target}: expected the include of {header} to fail as not found; "
                            f"compiler said: {lines[:3] or 'nothing'}")
    for target, header in allowed:
        if any(f"{target}.cc" in line and "error" in line for line in output.splitlines()):
            failures.append(f"{target}: {header} should compile for this layer, but did not")
    if allowed and run.returncode == 0 and forbidden:
        failures.append("the build succeeded although forbidden probes were in it")

    for failure in failures:
        print("FAIL", failure)
    if failures:
        print(output[-4000:])
        return 1
    print(f"{len(forbidden)} forbidden includes fail to compile, {len(allowed)} allowed ones compile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
