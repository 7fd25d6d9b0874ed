#!/usr/bin/python3
"""Independent reader of TensorBoard event files (no TensorFlow, no project
code): checks TFRecord framing and masked CRC32C, the brain.Event:2 header,
and the scalar summaries, against the run's metrics.json.

usage: read_events.py TRAIN_DIR
"""
import glob
import json
import os
import struct
import sys

def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table

TABLE = crc32c_table()

def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def records(blob):
    pos = 0
    while pos < len(blob):
        header = blob[pos:pos + 12]
        assert len(header) == 12, "truncated header at %d" % pos
        (length,) = struct.unpack("<Q", header[:8])
        (length_crc,) = struct.unpack("<I", header[8:])
        assert masked(header[:8]) == length_crc, "length CRC at %d" % pos
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        assert masked(data) == data_crc, "data CRC at %d" % pos
        yield data
        pos += 16 + length

def varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos

def fields(buf):
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise AssertionError("unexpected wire type %d" % wire)
        yield number, value

def parse_event(buf):
    event = {"scalars": {}}
    for number, value in fields(buf):
        if number == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2:
            event["step"] = value
        elif number == 3:
            event["file_version"] = value.decode()
        elif number == 5:
            for n, v in fields(value):
                if n != 1:
                    continue
                tag = simple = None
                for vn, vv in fields(v):
                    if vn == 1:
                        tag = vv.decode()
                    elif vn == 2:
                        simple = struct.unpack("<f", vv)[0]
                event["scalars"][tag] = simple
    return event

def main():
    train_dir = sys.argv[1]
    files = glob.glob(os.path.join(train_dir, "events.out.tfevents.*"))
    assert len(files) == 1, "expected one event file, found %r" % files
    events = [parse_event(r) for r in records(open(files[0], "rb").read())]
    checks = 0
    assert events[0].get("file_version") == "brain.Event:2", events[0]
    checks += 1
    summaries = [e for e in events[1:] if e["scalars"]]
    assert len(summaries) >= 2, "expected >= 2 summary events, got %d" % len(summaries)
    tags = {"loss", "accuracy", "learning_rate", "images_per_sec", "global_step/sec",
            "gradient_norm", "loss_scale"}
    for e in summaries:
        assert set(e["scalars"]) == tags, e["scalars"]
        assert e["wall_time"] > 1.5e9, e
        assert e["scalars"]["loss_scale"] == 1.0, e  # no loss scaling by default
        assert e["scalars"]["gradient_norm"] > 0, e
    checks += 1
    steps = [e.get("step", 0) for e in summaries]
    assert steps == sorted(set(steps)), steps
    checks += 1
    metrics = json.load(open(os.path.join(train_dir, "metrics.json")))
    last = summaries[-1]
    assert last["step"] == metrics["final_step"], (last, metrics)
    assert abs(last["scalars"]["loss"] - metrics["loss"]) <= 1e-5 * max(1, abs(metrics["loss"])), (last, metrics)
    checks += 1
    print("events: %d summary events, steps %s" % (len(summaries), steps))
    print("%d passed, 0 failed" % checks)

if __name__ == "__main__":
    main()
