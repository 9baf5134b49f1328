// Classifies the test images of an MNIST-layout dataset (MNIST, Fashion-MNIST) with a model that
// `normnet export` wrote, in ONNX Runtime for Node.js, and prints the accuracy. The graph's input
// shape is read from the model, so the MLP ([N, 784]), the CNN and ViT ([N, 1, 28, 28]) and the
// LSTM ([N, 28, 28]) all work. Pixels are scaled as in training: uint8 value / 255.
//
//   npm install onnxruntime-node     (in the folder you run it from)
//   node classify_onnxruntime.js model.onnx /usr/share/datasets/fashion-mnist
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
// Found where npm installed it: the current folder, or build/onnxruntime of a normnet checkout
// (tests/onnx/fetch_onnxruntime.sh puts it there for the tests).
const ort = require(require.resolve('onnxruntime-node',
                                    {paths: [process.cwd(), path.join(process.cwd(), 'build', 'onnxruntime')]}));

// An IDX file (raw or .gz): its dimensions and its bytes.
function readIdx(dir, name) {
  const file = [name, name + '.gz'].map((f) => path.join(dir, f)).find((f) => fs.existsSync(f));
  if (!file) throw new Error(`no ${name} in ${dir}`);
  let bytes = fs.readFileSync(file);
  if (file.endsWith('.gz')) bytes = zlib.gunzipSync(bytes);
  const dims = [];
  for (let i = 0; i < bytes[3]; ++i) dims.push(bytes.readUInt32BE(4 + 4 * i));
  return {dims, data: bytes.subarray(4 + 4 * dims.length)};
}

async function main() {
  const [model, dataDir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const images = readIdx(dataDir, 't10k-images-idx3-ubyte');
  const labels = readIdx(dataDir, 't10k-labels-idx1-ubyte').data;
  const [count, rows, cols] = images.dims;
  // The input's shape after the batch: [784], [1, 28, 28] or [28, 28].
  const perSample = session.inputMetadata[0].shape.slice(1);
  let correct = 0;
  const batch = 500;
  for (let first = 0; first < count; first += batch) {
    const n = Math.min(batch, count - first);
    const x = new Float32Array(n * rows * cols);
    for (let i = 0; i < x.length; ++i) x[i] = images.data[first * rows * cols + i] / 255;
    const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', x, [n, ...perSample])};
    const logits = (await session.run(feeds))[session.outputNames[0]];
    const classes = logits.dims[1];
    for (let s = 0; s < n; ++s) {
      let best = 0;
      for (let c = 1; c < classes; ++c) if (logits.data[s * classes + c] > logits.data[s * classes + best]) best = c;
      if (best === labels[first + s]) ++correct;
    }
  }
  console.log(`ONNX Runtime: accuracy ${(100 * correct / count).toFixed(2)}% (${correct}/${count})`);
}

main().catch((e) => {
  console.error(`classify_onnxruntime.js: ${e.message}`);
  process.exit(1);
});
