#!/usr/bin/env python3
"""Lists ThreadSanitizer reports whose racing accesses are in this project's own source.

gRPC 1.51 from Debian locks with an uninstrumented abseil, so TSan reports hundreds of races inside
gRPC; tests/tsan.supp silences them by library. Library suppressions match a whole report when any
frame is in gRPC, which could also hide a race in our reactor code (called from gRPC's threads).
This check reads an unsuppressed TSan log and fails if the top frame of an access of any report is
in server/, client/ or tests/: those are ours to fix, whatever else is on the stack. Reports whose
other access is the allocator (operator new/delete, malloc/free) are left out: an object made on
one gRPC thread and used on another is handed over through gRPC's completion queue, whose
uninstrumented locks TSan cannot see.
Usage: tsan_own_frames.py LOG...
"""
import re
import sys

OWN = re.compile(r"\.\./(server|client|tests)/")
ALLOCATOR = re.compile(r"^(operator new|operator delete|malloc|free|calloc|realloc)\b")


def top_frames(report):
    """Frame #0 of each access stack (the current access and the 'Previous' one)."""
    tops = []
    for block in re.split(r"\n\s*(?=Previous )", report):
        m = re.search(r"#0 (.*)", block)
        if m:
            tops.append(m.group(1))
    return tops


def main(paths):
    own = 0
    total = 0
    for path in paths:
        with open(path, errors="replace") as f:
            text = f.read()
        for report in text.split("WARNING: ThreadSanitizer")[1:]:
            report = report.split("SUMMARY:")[0]
            total += 1
            tops = top_frames(report)
            if any(OWN.search(f) for f in tops) and not any(ALLOCATOR.search(f) for f in tops):
                own += 1
                if own <= 5:
                    print("WARNING: ThreadSanitizer" + report)
    print(f"tsan: {total} report(s), {own} with an access in our own code")
    return 1 if own else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
