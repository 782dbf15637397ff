"""What the producer, the workers and the checker of the exactly-once example agree on: the names
of the Redis streams, the sink table, the prepared transactions' gids, and how to connect."""
import psycopg2

# Task T reads the Redis stream eo:T. Entry I is stored under the stream id "I-0", so a task's
# position (the last entry it read) is also where XREAD resumes: XREAD returns ids above it.
STREAM_PREFIX = "eo:"

# The sink. No unique key on entry_id, on purpose: a duplicate must show up as a second row for
# the checker to count, not as an error (and a uniqueness check against a row of a prepared
# transaction would block the insert until that transaction is resolved). checkpoint_id is the
# round whose prepared transaction committed the row, set just before PREPARE; NULL only inside
# the open transaction.
SCHEMA = """
DROP TABLE IF EXISTS eo_sink;
CREATE TABLE eo_sink (
    entry_id      bigint NOT NULL,
    task          text   NOT NULL,
    checkpoint_id bigint,
    payload       text   NOT NULL
);
CREATE INDEX eo_sink_unassigned ON eo_sink (task) WHERE checkpoint_id IS NULL;
"""


def stream_key(task):
    return STREAM_PREFIX + task


def entry_stream_id(entry_id):
    return f"{entry_id}-0"


def entry_of(stream_id):
    """The entry id of a Redis stream id "I-0"."""
    return int(stream_id.split("-", 1)[0])


def task_of_entry(entry_id, tasks):
    """Entries are dealt round robin over the tasks "0".."tasks-1"."""
    return str((entry_id - 1) % tasks)


def gid(task, checkpoint_id):
    """The prepared transaction holding what `task` read for round `checkpoint_id`."""
    return f"eo-{task}-{checkpoint_id}"


def gid_pattern(task):
    """A LIKE pattern matching every gid of `task` and no other task's (task ids are digits)."""
    return f"eo-{task}-%"


def checkpoint_of_gid(name):
    return int(name.rsplit("-", 1)[1])


def connect_pg(dsn):
    """A connection in autocommit mode: the example writes BEGIN, PREPARE TRANSACTION and
    COMMIT PREPARED itself, so that what reaches PostgreSQL is what the README describes."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    return conn


def parse_redis(address):
    host, port = address.rsplit(":", 1)
    return host, int(port)
