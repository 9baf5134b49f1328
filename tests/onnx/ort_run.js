// Runs ONNX models in ONNX Runtime (npm onnxruntime-node, CPU) for the tests: each job of a JSON
// manifest feeds a raw little-endian input file to a model batch by batch (so the batch size
// varies, the last batch being smaller) and writes the outputs, concatenated, as raw float32.
// One JSON line per job on stdout: {"model", "ok", "seconds"} or {"model", "ok": false, "error"}.
//
//   node ort_run.js <folder holding node_modules/onnxruntime-node> manifest.json
//
// manifest: {"jobs": [{"model": "m.onnx", "input": "x.bin", "dtype": "float32" | "int64",
//                      "shape": [count, ...], "batch": 1000, "output": "y.bin"}]}
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [runtimeDir, manifestPath] = process.argv.slice(2);
  let ort;
  try {
    ort = require(path.join(path.resolve(runtimeDir), 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    console.log(`NORMNET_SKIP: onnxruntime-node is not installed in ${runtimeDir} (${e.message.split('\n')[0]})`);
    process.exit(77);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  for (const job of manifest.jobs) {
    const start = process.hrtime.bigint();
    try {
      const session = await ort.InferenceSession.create(job.model, {intraOpNumThreads: 1, interOpNumThreads: 1});
      const bytes = fs.readFileSync(job.input);
      const perSample = job.shape.slice(1).reduce((a, b) => a * b, 1);
      const count = job.shape[0];
      const TypedArray = job.dtype === 'int64' ? BigInt64Array : Float32Array;
      const all = new TypedArray(bytes.buffer, bytes.byteOffset, count * perSample);
      const out = fs.openSync(job.output, 'w');
      for (let first = 0; first < count; first += job.batch) {
        const n = Math.min(job.batch, count - first);
        const data = all.slice(first * perSample, (first + n) * perSample);
        const feeds = {[session.inputNames[0]]: new ort.Tensor(job.dtype, data, [n, ...job.shape.slice(1)])};
        const result = await session.run(feeds);
        const y = result[session.outputNames[0]].data;
        fs.writeSync(out, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
      }
      fs.closeSync(out);
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      console.log(JSON.stringify({model: job.model, ok: true, seconds}));
    } catch (e) {
      console.log(JSON.stringify({model: job.model, ok: false, error: String(e.message || e).split('\n')[0]}));
    }
  }
}

main();
