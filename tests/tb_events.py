#!/usr/bin/python3
"""tests/tb_events.py RUNS_DIR METRICS_JSONL: reads the TensorBoard event files of RUNS_DIR with
an independent reader and checks them against metrics.jsonl: every number of every line is a
scalar at the line's step, tagged as docs/formats.md ("TensorBoard event file") says.

The reader is Google's protobuf runtime (python3-protobuf) on classes that protoc (Debian's
protobuf-compiler) generates from the minimal .proto below, written from the public field
numbers of tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto. The
record framing (length, masked CRC-32C of the length, data, masked CRC-32C of the data) is
checked here with a CRC-32C written from its definition (Castagnoli polynomial, reflected).
Exit 77 (ctest SKIP_RETURN_CODE) when protoc or python3-protobuf is missing.
"""
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

PROTO = """syntax = "proto3";
package tbcheck;
message SummaryValue { string tag = 1; float simple_value = 2; }
message Summary { repeated SummaryValue value = 1; }
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what { string file_version = 3; Summary summary = 5; }
}
"""


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        buf = f.read()
    i = 0
    while i < len(buf):
        hdr = buf[i:i + 8]
        (n,) = struct.unpack("<Q", hdr)
        (c1,) = struct.unpack("<I", buf[i + 8:i + 12])
        assert c1 == masked(hdr), "length CRC at byte %d" % i
        data = buf[i + 12:i + 12 + n]
        (c2,) = struct.unpack("<I", buf[i + 12 + n:i + 16 + n])
        assert len(data) == n and c2 == masked(data), "data CRC at byte %d" % i
        yield data
        i += 16 + n


def main(runs, metrics):
    protoc = shutil.which("protoc")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        protoc = None
    if not protoc:
        print("SKIP: protoc (protobuf-compiler) or python3-protobuf missing; scripts/deps.sh "
              "installs them")
        return 77
    tmp = tempfile.mkdtemp()
    try:
        with open(os.path.join(tmp, "tbcheck.proto"), "w") as f:
            f.write(PROTO)
        subprocess.check_call([protoc, "-I", tmp, "--python_out", tmp,
                               os.path.join(tmp, "tbcheck.proto")])
        sys.path.insert(0, tmp)
        import tbcheck_pb2
        files = sorted(glob.glob(os.path.join(runs, "events.out.tfevents.*")))
        assert len(files) == 1, files
        got = {}
        first = True
        for data in records(files[0]):
            ev = tbcheck_pb2.Event()
            ev.ParseFromString(data)
            assert ev.wall_time > 1.5e9, ev.wall_time
            if first:
                assert ev.WhichOneof("what") == "file_version", ev
                assert ev.file_version == "brain.Event:2", ev.file_version
                first = False
                continue
            assert ev.WhichOneof("what") == "summary", ev
            for v in ev.summary.value:
                key = (ev.step, v.tag)
                got.setdefault(key, []).append(v.simple_value)
        want = {}
        with open(metrics) as f:
            for line in f:
                o = json.loads(line)
                for k, x in o.items():
                    if k == "step" or x is None:
                        continue
                    tag = "eval/" + k[5:] if k.startswith("eval_") else "train/" + k
                    want.setdefault((o["step"], tag), []).append(x)
        assert set(got) == set(want), sorted(set(got) ^ set(want))[:10]
        for key, xs in want.items():
            ys = got[key]
            assert len(xs) == len(ys), key
            for x, y in zip(xs, ys):
                # float as stored; metrics.jsonl prints 15 significant digits, so its decimal
                # can round to the f32 next to the one the trainer's double gave: one f32 ulp
                f32 = struct.unpack("<f", struct.pack("<f", x))[0]
                ulp = abs(f32) * 2.0 ** -23 if f32 else 0.0
                assert abs(y - f32) <= ulp or (math.isnan(y) and math.isnan(f32)), (key, x, y)
        n_eval = sum(1 for s, t in want if t.startswith("eval/"))
        print("ok: %s: %d scalars (%d eval) at %d steps match metrics.jsonl"
              % (os.path.basename(files[0]), sum(len(v) for v in want.values()), n_eval,
                 len({s for s, _ in want})))
        return 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
