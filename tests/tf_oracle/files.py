"""TensorFlow as the oracle for this port's files.

1. Our TFRecords of tf.train.Examples (convert_dataset, Fashion-MNIST) read by
   tf.data.TFRecordDataset + tf.io.parse_single_example with TF-slim's keys:
   every label and every decoded pixel equal to the source IDX files.
2. TFRecords TensorFlow writes (tf.io.TFRecordWriter, PNGs from
   tf.io.encode_png) read by our evaluation: every record counted, every
   label's count equal. A GZIP-compressed one is refused with exit 3 and the
   gzip hint (docs/io.md: only uncompressed TFRecords are supported).
3. Our TensorBoard event file read by tf.compat.v1.train.summary_iterator:
   every record parses (TF checks each CRC), the file version is
   "brain.Event:2", and every scalar is finite at a step the run reached.

Run by scripts/tf_oracle.sh: python files.py BIN_DIR WORK_DIR FMNIST_DIR
"""
import glob
import gzip
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

N = 200


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def run(cmd, want=0):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != want:
        raise RuntimeError("%s exited %d (want %d): %s" % (
            " ".join(cmd), r.returncode, want, (r.stdout + r.stderr)[-1500:]))
    return r.stdout + r.stderr


def ours_read_by_tf(bin_dir, work, fmnist):
    data = os.path.join(work, "ours")
    run([os.path.join(bin_dir, "convert_dataset"), "--dataset_name", "fashion_mnist",
         "--input", fmnist, "--dataset_dir", data, "--max_examples", str(N)])
    images = idx(os.path.join(fmnist, "train-images-idx3-ubyte.gz"))[:N]
    labels = idx(os.path.join(fmnist, "train-labels-idx1-ubyte.gz"))[:N]
    features = {
        "image/encoded": tf.io.FixedLenFeature([], tf.string),
        "image/format": tf.io.FixedLenFeature([], tf.string),
        "image/class/label": tf.io.FixedLenFeature([], tf.int64),
        "image/height": tf.io.FixedLenFeature([], tf.int64),
        "image/width": tf.io.FixedLenFeature([], tf.int64),
    }
    files = sorted(glob.glob(os.path.join(data, "*_train*.tfrecord")))
    n = 0
    for record in tf.data.TFRecordDataset(files):
        ex = tf.io.parse_single_example(record, features)
        pixels = tf.io.decode_png(ex["image/encoded"], channels=1).numpy()[:, :, 0]
        assert ex["image/format"].numpy() == b"png", ex["image/format"]
        assert (ex["image/height"].numpy(), ex["image/width"].numpy()) == (28, 28)
        assert int(ex["image/class/label"].numpy()) == int(labels[n]), n
        assert np.array_equal(pixels, images[n]), "pixels of record %d differ" % n
        n += 1
    assert n == N, "TensorFlow read %d records of %d" % (n, N)
    return {"check": "our TFRecords read by TensorFlow", "records": n,
            "labels_equal": True, "pixels_equal": True}


def write_tf_records(path, images, labels, options=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path, options) as w:
        for img, label in zip(images, labels):
            png = tf.io.encode_png(img[:, :, None]).numpy()
            feature = {
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
                "image/format": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"png"])),
                "image/class/label": tf.train.Feature(
                    int64_list=tf.train.Int64List(value=[int(label)])),
                "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[28])),
                "image/width": tf.train.Feature(int64_list=tf.train.Int64List(value=[28])),
            }
            ex = tf.train.Example(features=tf.train.Features(feature=feature))
            w.write(ex.SerializeToString())


def tf_read_by_ours(bin_dir, work, fmnist):
    images = idx(os.path.join(fmnist, "t10k-images-idx3-ubyte.gz"))[:N]
    labels = idx(os.path.join(fmnist, "t10k-labels-idx1-ubyte.gz"))[:N]
    data = os.path.join(work, "tf")
    for split in ("train", "test"):
        write_tf_records(os.path.join(data, "mnist_%s.tfrecord" % split), images, labels)
    common = ["--model_name=lenet", "--dataset_name=fashion_mnist", "--dataset_dir=" + data,
              "--num_preprocessing_threads=1", "--use_fp16=False"]
    train_dir = os.path.join(work, "tf_run")
    run([os.path.join(bin_dir, "train_image_classifier")] + common +
        ["--train_dir=" + train_dir, "--stop_at_step=1", "--batch_size=8"])
    out = run([os.path.join(bin_dir, "eval_image_classifier")] + common +
              ["--checkpoint_path=" + train_dir, "--eval_split_name=test"])
    result = json.loads(out.split("eval_result ", 1)[1].splitlines()[0])
    want = np.bincount(labels, minlength=10).tolist()
    assert result["samples"] == N, result
    assert result["class_total"] == want, (result["class_total"], want)
    # The same records, GZIP-compressed: refused, saying so.
    gz = os.path.join(work, "tf_gzip")
    write_tf_records(os.path.join(gz, "mnist_test.tfrecord"), images, labels,
                     tf.io.TFRecordOptions(compression_type="GZIP"))
    write_tf_records(os.path.join(gz, "mnist_train.tfrecord"), images, labels)
    msg = run([os.path.join(bin_dir, "eval_image_classifier")] +
              [c if not c.startswith("--dataset_dir=") else "--dataset_dir=" + gz
               for c in common] +
              ["--checkpoint_path=" + train_dir, "--eval_split_name=test"], want=3)
    assert "gzip" in msg.lower(), msg[-500:]
    return {"check": "TensorFlow's TFRecords read by ours", "records": result["samples"],
            "class_totals_equal": True, "gzip": "exit 3 naming gzip"}


def events_read_by_tf(bin_dir, work):
    data = os.path.join(work, "ours")
    train_dir = os.path.join(work, "events_run")
    steps = 40
    run([os.path.join(bin_dir, "train_image_classifier"), "--model_name=lenet",
         "--dataset_name=fashion_mnist", "--dataset_dir=" + data, "--train_dir=" + train_dir,
         "--stop_at_step=%d" % steps, "--batch_size=16", "--use_fp16=False",
         "--optimizer=momentum", "--save_summaries_secs=1", "--log_loss_every_n_iters=0",
         "--num_preprocessing_threads=1"])
    files = glob.glob(os.path.join(train_dir, "events.out.tfevents.*"))
    assert files, "no event file in " + train_dir
    events, scalars, tags = 0, 0, set()
    for path in files:
        for i, e in enumerate(tf.compat.v1.train.summary_iterator(path)):
            events += 1
            if i == 0:
                assert e.file_version == "brain.Event:2", e.file_version
            for v in e.summary.value:
                if v.HasField("simple_value"):
                    assert np.isfinite(v.simple_value), (v.tag, e.step)
                    assert 0 <= e.step <= steps, (v.tag, e.step)
                    scalars += 1
                    tags.add(v.tag)
    assert scalars > 0 and "loss" in tags, tags
    return {"check": "our event files read by TensorFlow", "events": events,
            "scalars": scalars, "tags": sorted(tags)}


def main():
    bin_dir, work, fmnist = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for check in (lambda: ours_read_by_tf(bin_dir, work, fmnist),
                  lambda: tf_read_by_ours(bin_dir, work, fmnist),
                  lambda: events_read_by_tf(bin_dir, work)):
        try:
            print(json.dumps(check()), flush=True)
        except Exception as e:  # reported, and the run fails
            print(json.dumps({"error": repr(e)[-1500:]}), flush=True)
            failed += 1
    print("tf_oracle files: %d of 3 checks passed" % (3 - failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
