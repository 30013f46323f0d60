"""roundtrip.py drives kafka-python for integration/compat (TestKafkaPython,
TestGroupKafkaPython).

    /usr/bin/python3 roundtrip.py produce|consume|group < request.json > response.json

Run it with Debian's python (/usr/bin/python3): kafka-python and its codecs come
from Debian's python3-kafka, python3-snappy, python3-lz4 and python3-zstandard.

The request (JSON on stdin): {brokers, topic, codec, records, count,
timeout_ms}. `produce` sends `records` (each to its partition, with key,
headers and timestamp) and flushes, then prints {"produced": [{partition,
offset}]}. `consume` assigns partition 0 (no consumer group), reads `count`
records from the beginning and prints {"consumed": [{partition, offset, key,
value, headers, timestamp}]}. `group` subscribes to the topic in consumer
group `group`, reads `count` records from the group's committed offsets (the
beginning when it has none), commits its position, leaves the group and prints
the same. Diagnostics go to stderr; any failure exits
non-zero.
"""

import json
import logging
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def produce(req):
    deadline = time.monotonic() + req["timeout_ms"] / 1000
    producer = KafkaProducer(
        bootstrap_servers=req["brokers"],
        client_id="runnel-compat-kafka-python",
        acks="all",
        compression_type=None if req["codec"] == "none" else req["codec"],
        linger_ms=50,  # the records go out in one batch
        request_timeout_ms=10000,
    )
    try:
        futures = [
            producer.send(
                req["topic"],
                partition=r["partition"],
                key=r["key"].encode(),
                value=r["value"].encode(),
                headers=[(h["key"], h["value"].encode()) for h in r["headers"]],
                timestamp_ms=r["timestamp"],
            )
            for r in req["records"]
        ]
        producer.flush(timeout=max(deadline - time.monotonic(), 0))
        produced = []
        for f in futures:
            md = f.get(timeout=max(deadline - time.monotonic(), 0))
            produced.append({"partition": md.partition, "offset": md.offset})
        return {"produced": produced}
    finally:
        producer.close(timeout=5)


def to_json(r):
    return {
        "partition": r.partition,
        "offset": r.offset,
        "key": (r.key or b"").decode(),
        "value": (r.value or b"").decode(),
        "headers": [{"key": k, "value": (v or b"").decode()} for k, v in r.headers],
        "timestamp": r.timestamp,
    }


def poll_count(consumer, req, deadline):
    consumed = []
    while len(consumed) < req["count"]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(
                "have %d of %d records from %s" % (len(consumed), req["count"], req["topic"])
            )
        for recs in consumer.poll(timeout_ms=int(min(left, 1) * 1000)).values():
            consumed.extend(to_json(r) for r in recs)
    return consumed


def consume(req):
    deadline = time.monotonic() + req["timeout_ms"] / 1000
    consumer = KafkaConsumer(
        bootstrap_servers=req["brokers"],
        client_id="runnel-compat-kafka-python",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    try:
        tp = TopicPartition(req["topic"], 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return {"consumed": poll_count(consumer, req, deadline)}
    finally:
        consumer.close()


def group(req):
    deadline = time.monotonic() + req["timeout_ms"] / 1000
    consumer = KafkaConsumer(
        req["topic"],
        bootstrap_servers=req["brokers"],
        client_id="runnel-compat-kafka-python",
        group_id=req["group"],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    try:
        consumed = poll_count(consumer, req, deadline)
        consumer.commit()  # synchronous: the position after every record polled
        return {"consumed": consumed}
    finally:
        consumer.close()  # leaves the group


def main():
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    modes = {"produce": produce, "consume": consume, "group": group}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        sys.exit("usage: roundtrip.py produce|consume|group < request.json")
    req = json.load(sys.stdin)
    out = modes[sys.argv[1]](req)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
