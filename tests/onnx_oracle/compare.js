// ONNX Runtime (onnxruntime-node, CPU) runs an exported model on the input
// onnx_oracle_reference wrote and compares its logits with this port's.
// Prints one JSON line; exit 0 when the largest absolute difference is
// within 1e-4 x max(1, largest |logit|), else 1.
//   node compare.js NET MODEL.onnx INPUT.f32 LOGITS.f32 N C S [EXTRA_JSON]
// EXTRA_JSON: fields copied into the line (the script's export time).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function floats(path) {
  const b = fs.readFileSync(path);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

async function main() {
  const [net, model, inputPath, logitsPath, n, c, s, extra] = process.argv.slice(2);
  const dims = [n, c, s, s].map(Number);
  const input = floats(inputPath);
  const want = floats(logitsPath);
  const t0 = Date.now();
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all',
    intraOpNumThreads: 2,
  });
  const t1 = Date.now();
  const out = await session.run({ images: new ort.Tensor('float32', input, dims) });
  const t2 = Date.now();
  const got = out.logits;
  const result = {
    net,
    ...(extra ? JSON.parse(extra) : {}),
    ort_version: ort.env.versions?.common,
    input_names: session.inputNames,
    output_names: session.outputNames,
    logits_shape: got.dims,
    load_ms: t1 - t0,
    run_ms: t2 - t1,
  };
  let maxDiff = 0;
  let maxLogit = 0;
  if (got.data.length !== want.length) {
    result.error = `ORT gave ${got.data.length} logits, ours ${want.length}`;
    maxDiff = Infinity;
  } else {
    for (let i = 0; i < want.length; ++i) {
      maxDiff = Math.max(maxDiff, Math.abs(got.data[i] - want[i]));
      maxLogit = Math.max(maxLogit, Math.abs(want[i]));
    }
  }
  result.max_abs_diff = maxDiff;
  result.max_abs_logit = maxLogit;
  result.tolerance = 1e-4 * Math.max(1, maxLogit);
  result.pass = maxDiff <= result.tolerance;
  console.log(JSON.stringify(result));
  process.exit(result.pass ? 0 : 1);
}

main().catch((e) => {
  const extra = process.argv[9] ? JSON.parse(process.argv[9]) : {};
  console.log(JSON.stringify({ net: process.argv[2], ...extra, pass: false, error: String(e) }));
  process.exit(1);
});
