#!/usr/bin/python3
# gen.py writes record batches as kafka-python (Debian's python3-kafka 2.0.2)
# builds them for produce requests, one file per codec, for batch's tests:
# <codec>.bin holds 40 records, key "key-<i>", value "value-<i>" padded to
# 200 bytes with '.', a header "h"="v" on record 7, producer id 1000, epoch 0,
# base sequence 0. big-snappy.bin holds 200 records of 1000 bytes, so that the
# xerial framing has several 32 KiB blocks.
#
# Run it from this directory: /usr/bin/python3 gen.py
from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def build(codec, n, size):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                  producer_id=1000, producer_epoch=0, base_sequence=0,
                                  batch_size=1 << 30)
    for i in range(n):
        value = ("value-%d" % i).encode().ljust(size, b".")
        headers = [("h", b"v")] if i == 7 else []
        b.append(i, timestamp=1700000000000 + i, key=("key-%d" % i).encode(), value=value, headers=headers)
    return bytes(b.build())


for name, codec in CODECS.items():
    with open(name + ".bin", "wb") as f:
        f.write(build(codec, 40, 200))
with open("big-snappy.bin", "wb") as f:
    f.write(build(2, 200, 1000))
