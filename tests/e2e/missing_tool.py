"""Stands in for an end-to-end test that the build could not set up because a tool is missing
(tests/CMakeLists.txt registers it under the test's own name). Fails in CI, which must have every
tool; elsewhere says what is missing and exits 77, which ctest reports as skipped.

Usage: missing_tool.py TEST WHAT"""
import sys

from e2e_util import running_in_ci

SKIPPED = 77


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    test, what = sys.argv[1:]
    if running_in_ci():
        print(f"{test}: {what} is missing, and CI must have it", file=sys.stderr)
        return 1
    print(f"SKIPPED: {test}: {what} is missing (in CI this test fails)", file=sys.stderr)
    return SKIPPED


if __name__ == "__main__":
    sys.exit(main())
