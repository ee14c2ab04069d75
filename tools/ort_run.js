#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU execution provider) on one .npy
// input and writes its first output as .npy, or every output as NAME.npy in
// a folder: the numerical oracle of the ios test suite.
//
//   node tools/ort_run.js MODEL.onnx INPUT.npy OUTPUT.npy
//   node tools/ort_run.js MODEL.onnx INPUT.npy OUTPUT_DIR/   (an existing folder)
//
// Graph optimizations are disabled so that ONNX Runtime evaluates the model as
// written (no fusions of its own between the file and the numbers);
// ORT_GRAPH_OPTIMIZATION=basic|extended|all turns them on (the tests use the
// difference as a measure of float32 rounding noise). The model must have a
// single float32 input; ORT_THREADS sets the intra-op threads.
// Requires the npm package onnxruntime-node (scripts/setup.sh installs it with
// `npm install --ignore-scripts`). Exit status: 0 ok, 2 bad usage or input,
// 1 anything else.
'use strict';

const fs = require('fs');
const path = require('path');

function fail(code, message) {
  process.stderr.write(`ort_run: ${message}\n`);
  process.exit(code);
}

// --- .npy (format versions 1.0-3.0; '<f4' written, '<f4'/'<f8' read) -------

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf[6];
  let headerLen, start;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    start = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    start = 12;
  } else {
    throw new Error(`${file}: unsupported .npy version ${major}`);
  }
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const order = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shapeText) throw new Error(`${file}: bad .npy header: ${header.trim()}`);
  if (order[1] === 'True') throw new Error(`${file}: Fortran-order arrays are not supported`);
  const shape = shapeText[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const dataStart = start + headerLen;
  let item;
  if (descr[1] === '<f4') item = 4;
  else if (descr[1] === '<f8') item = 8;
  else throw new Error(`${file}: unsupported dtype '${descr[1]}' (use '<f4')`);
  if (buf.length - dataStart !== count * item) {
    throw new Error(`${file}: data size ${buf.length - dataStart} does not match shape (${shape}) of ${descr[1]}`);
  }
  const data = new Float32Array(count);
  for (let i = 0; i < count; ++i) {
    data[i] = item === 4 ? buf.readFloatLE(dataStart + 4 * i) : buf.readDoubleLE(dataStart + 8 * i);
  }
  return { shape, data };
}

function writeNpy(file, shape, data) {
  const shapeText = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shapeText}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  const out = Buffer.alloc(total + 4 * data.length);
  out.write('\x93NUMPY', 0, 'latin1');
  out[6] = 1;
  out[7] = 0;
  out.writeUInt16LE(header.length, 8);
  out.write(header, 10, 'latin1');
  for (let i = 0; i < data.length; ++i) out.writeFloatLE(data[i], total + 4 * i);
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, out);
  fs.renameSync(tmp, file);
}

// --- main -------------------------------------------------------------------

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 3 || args.includes('-h') || args.includes('--help')) {
    fail(2, 'usage: node tools/ort_run.js MODEL.onnx INPUT.npy OUTPUT.npy');
  }
  const [modelPath, inputPath, outputPath] = args;
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail(2, `cannot load onnxruntime-node (${e.message.split('\n')[0]}); run scripts/setup.sh ` +
            `(npm install --ignore-scripts) in ${path.resolve(__dirname, '..')}`);
  }
  let input;
  try {
    input = readNpy(inputPath);
  } catch (e) {
    fail(2, e.message);
  }
  const level = process.env.ORT_GRAPH_OPTIMIZATION || 'disabled';
  if (!['disabled', 'basic', 'extended', 'all'].includes(level)) {
    fail(2, `ORT_GRAPH_OPTIMIZATION must be disabled, basic, extended or all, not '${level}'`);
  }
  const options = { executionProviders: ['cpu'], graphOptimizationLevel: level };
  if (process.env.ORT_THREADS) options.intraOpNumThreads = Number(process.env.ORT_THREADS);
  let session;
  try {
    session = await ort.InferenceSession.create(modelPath, options);
  } catch (e) {
    fail(2, `${modelPath}: ONNX Runtime cannot load the model: ${e.message}`);
  }
  if (session.inputNames.length !== 1) {
    fail(2, `${modelPath}: the model has ${session.inputNames.length} inputs; ort_run takes exactly one`);
  }
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', input.data, input.shape) };
  const start = process.hrtime.bigint();
  const results = await session.run(feeds);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const toFolder = outputPath.endsWith('/') || (fs.existsSync(outputPath) && fs.statSync(outputPath).isDirectory());
  const names = toFolder ? session.outputNames : [session.outputNames[0]];
  for (const name of names) {
    if (toFolder && !/^[A-Za-z0-9_.-]+$/.test(name)) {
      fail(2, `${modelPath}: output '${name}' cannot name a file; give an OUTPUT.npy for the first output`);
    }
    const output = results[name];
    writeNpy(toFolder ? path.join(outputPath, `${name}.npy`) : outputPath, Array.from(output.dims, Number), output.data);
    process.stderr.write(`ort_run: ${path.basename(modelPath)}: '${name}' ${output.dims.join('x')} in ${ms.toFixed(1)} ms\n`);
  }
}

main().catch((e) => fail(1, e.stack || String(e)));
