// The round trip's ONNX Runtime side: an exported 1-channel 28x28 network
// (lenet on Fashion-MNIST) classifies the idx test set with lenet's eval
// preprocessing, (x - 128) / 128, and counts its top-1 hits, to compare
// with eval_image_classifier's count of the same checkpoint.
//   node roundtrip.js MODEL.onnx IMAGES-idx3-ubyte.gz LABELS-idx1-ubyte.gz
// Prints one JSON line {samples, top1_correct, accuracy}.
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const ort = require('onnxruntime-node');

function idx(path, headerBytes) {
  const b = zlib.gunzipSync(fs.readFileSync(path));
  return { count: b.readUInt32BE(4), data: b.subarray(headerBytes) };
}

async function main() {
  const [model, imagesPath, labelsPath] = process.argv.slice(2);
  const images = idx(imagesPath, 16);
  const labels = idx(labelsPath, 8);
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 2 });
  const pixels = 28 * 28;
  const batch = 500;
  let correct = 0;
  for (let start = 0; start < images.count; start += batch) {
    const n = Math.min(batch, images.count - start);
    const input = new Float32Array(n * pixels);
    for (let i = 0; i < n * pixels; ++i) input[i] = (images.data[start * pixels + i] - 128) / 128;
    const out = await session.run({ images: new ort.Tensor('float32', input, [n, 1, 28, 28]) });
    const logits = out.logits.data;
    const classes = out.logits.dims[1];
    for (let i = 0; i < n; ++i) {
      let best = 0;
      for (let c = 1; c < classes; ++c) {
        if (logits[i * classes + c] > logits[i * classes + best]) best = c;
      }
      if (best === labels.data[start + i]) ++correct;
    }
  }
  console.log(JSON.stringify({ samples: images.count, top1_correct: correct,
                               accuracy: correct / images.count }));
}

main().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
