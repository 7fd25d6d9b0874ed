// The independent side of the interoperability test: @roboflow/tfrecords
// (TFRecord framing + tf.train.Example-compatible protobuf, in JavaScript).
//
//   node roboflow_tfrecords.js write FILE N   N records: a 3-channel PNG of
//       height 5+i, width 7+2i, pixel (y,x,c) = (31*i + 7*y + 3*x + 50*c) & 255,
//       label (3*i) % 10, format "png", plus features FastNN ignores
//   node roboflow_tfrecords.js read FILE      one JSON line per record:
//       {label, height, width, format, size, crc}, crc = CRC-32 of the
//       encoded image bytes
//
// NODE_PATH must reach node_modules holding @roboflow/tfrecords.
"use strict";
const fs = require("fs");
const zlib = require("zlib");
const { TFRecordsBuilder, FeatureType } = require("@roboflow/tfrecords");
const { TFRecordsReader } = require("@roboflow/tfrecords/src/tensorFlowReader");

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

// An 8-bit RGB PNG, written by hand (filter type 0 on every row).
function png(height, width, pixel) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 2;  // color type RGB
  const raw = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) raw[y * (1 + width * 3) + 1 + x * 3 + c] = pixel(y, x, c);
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr), chunk("IDAT", zlib.deflateSync(raw)), chunk("IEND", Buffer.alloc(0)),
  ]);
}

function write(file, n) {
  const records = [];
  for (let i = 0; i < n; i++) {
    const h = 5 + i, w = 7 + 2 * i;
    const b = new TFRecordsBuilder();
    b.addFeature("image/encoded", FeatureType.Binary,
                 png(h, w, (y, x, c) => (31 * i + 7 * y + 3 * x + 50 * c) & 255));
    b.addFeature("image/format", FeatureType.String, "png");
    b.addFeature("image/class/label", FeatureType.Int64, (3 * i) % 10);
    b.addFeature("image/height", FeatureType.Int64, h);
    b.addFeature("image/width", FeatureType.Int64, w);
    b.addFeature("image/filename", FeatureType.String, `img${i}.png`);
    b.addArrayFeature("image/object/bbox/xmin", FeatureType.Float, [0.25, 0.5]);
    records.push(b.build());
  }
  fs.writeFileSync(file, TFRecordsBuilder.buildTFRecords(records));
}

// TFRecordsReader checks both CRCs and parses each record with the
// package's protobuf classes. Its getFeature() helper reads google-protobuf
// internals (`.array`) that google-protobuf >= 3.8 does not have, so the
// values are taken through the generated classes' public getters instead.
function read(file) {
  const r = new TFRecordsReader(fs.readFileSync(file));
  const feature = (i, key) => r.imageMessages[i].getContext().getFeatureMap().get(key);
  const int64 = (i, key) => Number(feature(i, key).getInt64List().getValueList()[0]);
  const bytes = (i, key) => Buffer.from(feature(i, key).getBytesList().getValueList_asU8()[0]);
  for (let i = 0; i < r.length; i++) {
    const encoded = bytes(i, "image/encoded");
    console.log(JSON.stringify({
      label: int64(i, "image/class/label"),
      height: int64(i, "image/height"),
      width: int64(i, "image/width"),
      format: bytes(i, "image/format").toString("utf8"),
      size: encoded.length,
      crc: crc32(encoded),
    }));
  }
}

const [mode, file, n] = process.argv.slice(2);
if (mode === "write") write(file, Number(n));
else if (mode === "read") read(file);
else {
  console.error("usage: roboflow_tfrecords.js write FILE N | read FILE");
  process.exit(2);
}
