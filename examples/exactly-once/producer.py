#!/usr/bin/python3
"""Appends entries 1..N to the example's Redis streams, round robin over the tasks, at a steady
rate. Entry I goes to stream eo:<(I-1) mod tasks> under the stream id "I-0".

Started again, it resumes after the highest entry already in the streams (Redis refuses an id
that is not above a stream's last one, so an entry is never appended twice).

Usage: producer.py --redis HOST:PORT --tasks T --entries N [--rate PER_SECOND]
"""
import argparse
import sys
import time

import redis

import eo_common as eo

# Entries per pipelined batch: a batch every few milliseconds keeps the rate smooth.
BATCH_S = 0.01


def highest_entry(r, tasks):
    highest = 0
    for t in range(tasks):
        last = r.xrevrange(eo.stream_key(str(t)), count=1)
        if last:
            highest = max(highest, eo.entry_of(last[0][0]))
    return highest


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", required=True, help="HOST:PORT")
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--entries", type=int, required=True)
    parser.add_argument("--rate", type=float, default=1000.0, help="entries per second")
    args = parser.parse_args()
    host, port = eo.parse_redis(args.redis)
    r = redis.Redis(host=host, port=port, decode_responses=True)

    next_entry = highest_entry(r, args.tasks) + 1
    started = time.monotonic()
    first = next_entry
    while next_entry <= args.entries:
        # The last entry the rate says should be in by now.
        due = min(args.entries, first - 1 + int((time.monotonic() - started) * args.rate))
        if due >= next_entry:
            pipe = r.pipeline(transaction=False)
            for entry in range(next_entry, due + 1):
                pipe.xadd(eo.stream_key(eo.task_of_entry(entry, args.tasks)),
                          {"payload": f"entry {entry}"}, id=eo.entry_stream_id(entry))
            pipe.execute()
            next_entry = due + 1
        time.sleep(BATCH_S)
    print(f"producer: {args.entries} entries in the streams", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
