// ONNX Runtime (npm's onnxruntime-node, CPU execution provider) as the peer of
// beamgpu's ONNX runtime: it makes the reference outputs of the test models and
// times them for `make bench`. Run it through containers/onnx/ort.sh, which
// installs onnxruntime-node on first use and puts it in NODE_PATH:
//
//   containers/onnx/ort.sh -- containers/onnx/ort_run.js run MODEL.onnx --in X.pb [--in ...] --out Y.pb [--out ...]
//       Runs the model once on the inputs (in the order of the model's inputs) and
//       writes its outputs (in the order of the model's outputs; fewer --out than
//       outputs writes the first ones). Files are ONNX TensorProtos (.pb, as ONNX's
//       test data sets hold them) or NumPy arrays (.npy), by their extension.
//
//   containers/onnx/ort.sh -- containers/onnx/ort_run.js bench [--batch 64] [--warmup 3] [--runs 10] MODEL.onnx INPUT ...
//       For each model and its input file (a batch whose rows are repeated, in
//       order, to fill --batch rows): one session, --warmup runs, then --runs timed
//       runs of session.run, and one line with their median:
//         ort NAME batch=64 ms=12.345 rows_per_s=5184.2 threads=2 runs=10 min_ms=12.0 ort=1.30.0
//
//   containers/onnx/ort.sh -- containers/onnx/ort_run.js zoo [--threads N] [--warmup 2] [--runs 5] [--ref DIR] MANIFEST [NAME/LABEL ...]
//       The entries of a manifest of containers/onnx/bench_models.py (make bench-onnx):
//       one line each, `ort NAME/LABEL ms=MEDIAN min_ms=... cpu_ms=MEDIAN threads=N runs=N ort=VERSION`
//       (cpu_ms: the process's user and system CPU time over a run, process.cpuUsage);
//       with --ref, each entry's first output is written to DIR/NAME-LABEL.ort.npy.
//
// Options: --threads N sets the intra-op threads (default: every core the process
// may use, as beamgpu's runtime uses all cores; inter-op 1, sequential execution,
// all graph optimisations).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('ort_run: onnxruntime-node not found: run this through containers/onnx/ort.sh (' + e.message + ')');
  process.exit(2);
}

// ---- tensors: ONNX's TensorProto (a minimal protobuf codec) and NumPy's .npy ----

// ONNX TensorProto.DataType -> [ORT type, typed array, bytes per element].
const onnxTypes = {
  1: ['float32', Float32Array, 4],
  2: ['uint8', Uint8Array, 1],
  3: ['int8', Int8Array, 1],
  6: ['int32', Int32Array, 4],
  7: ['int64', BigInt64Array, 8],
  9: ['bool', Uint8Array, 1],
  11: ['float64', Float64Array, 8],
};
const ortToOnnx = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, bool: 9, float64: 11 };

// NumPy descr -> ORT type, and back.
const npyTypes = { '<f4': 'float32', '<f8': 'float64', '<i4': 'int32', '<i8': 'int64', '|u1': 'uint8', '|i1': 'int8', '|b1': 'bool' };
const ortToNpy = Object.fromEntries(Object.entries(npyTypes).map(([k, v]) => [v, k]));

function typedArray(type, buf) {
  const [, Ctor, size] = Object.values(onnxTypes).find((t) => t[0] === type);
  // Copy into a fresh, aligned buffer.
  const out = new Ctor(buf.length / size);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

function bytesOf(data) {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

function readVarint(buf, pos) {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [v, pos];
    shift += 7n;
  }
}

function varint(v) {
  v = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return Buffer.from(out);
}

// decodeTensorProto reads dims (1), data_type (2), name (8) and raw_data (9); a
// tensor with its values in the typed fields instead of raw_data is refused.
function decodeTensorProto(buf, file) {
  const dims = [];
  let type = 0;
  let name = '';
  let raw = null;
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let v;
    if (wire === 0) {
      [v, pos] = readVarint(buf, pos);
      if (field === 1) dims.push(Number(BigInt.asIntN(64, v)));
      if (field === 2) type = Number(v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const body = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
      if (field === 1) {
        for (let p = 0; p < body.length; ) {
          [v, p] = readVarint(body, p);
          dims.push(Number(BigInt.asIntN(64, v)));
        }
      } else if (field === 8) {
        name = body.toString('utf8');
      } else if (field === 9) {
        raw = body;
      } else if (field >= 4 && field <= 7) {
        throw new Error(`${file}: values in typed fields (field ${field}): only raw_data is read here`);
      }
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      throw new Error(`${file}: protobuf wire type ${wire}`);
    }
  }
  const t = onnxTypes[type];
  if (!t) throw new Error(`${file}: TensorProto data type ${type} is not supported here`);
  const n = dims.reduce((a, b) => a * b, 1);
  const have = raw ? raw.length : 0;
  if (have !== n * t[2]) throw new Error(`${file}: ${t[0]} [${dims}] needs ${n * t[2]} bytes, raw_data holds ${have}`);
  return { name, tensor: new ort.Tensor(t[0], typedArray(t[0], raw || Buffer.alloc(0)), dims) };
}

function encodeTensorProto(name, tensor) {
  const type = ortToOnnx[tensor.type];
  if (!type) throw new Error(`output ${name}: type ${tensor.type} cannot be written`);
  const parts = [];
  for (const d of tensor.dims) parts.push(varint(1 << 3), varint(d));
  parts.push(varint(2 << 3), varint(type));
  const nameBytes = Buffer.from(name, 'utf8');
  parts.push(varint((8 << 3) | 2), varint(nameBytes.length), nameBytes);
  const raw = bytesOf(tensor.data);
  parts.push(varint((9 << 3) | 2), varint(raw.length), raw);
  return Buffer.concat(parts);
}

function decodeNpy(buf, file) {
  if (buf.subarray(0, 6).toString('latin1') !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.subarray(start, start + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) throw new Error(`${file}: unsupported .npy header ${header.trim()}`);
  const type = npyTypes[descr[1]];
  if (!type) throw new Error(`${file}: .npy type ${descr[1]} is not supported here`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  return { name: '', tensor: new ort.Tensor(type, typedArray(type, buf.subarray(start + hlen)), dims) };
}

function encodeNpy(tensor) {
  const descr = ortToNpy[tensor.type];
  if (!descr) throw new Error(`type ${tensor.type} cannot be written as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), bytesOf(tensor.data)]);
}

function readTensor(file) {
  const buf = fs.readFileSync(file);
  return file.endsWith('.npy') ? decodeNpy(buf, file) : decodeTensorProto(buf, file);
}

function writeTensor(file, name, tensor) {
  fs.writeFileSync(file, file.endsWith('.npy') ? encodeNpy(tensor) : encodeTensorProto(name, tensor));
}

// repeatRows makes a tensor of batch rows from t's rows, repeated in order.
function repeatRows(t, batch) {
  const rows = t.dims[0];
  const per = t.data.length / rows;
  const data = new t.data.constructor(per * batch);
  for (let r = 0; r < batch; r++) data.set(t.data.subarray((r % rows) * per, (r % rows + 1) * per), r * per);
  return new ort.Tensor(t.type, data, [batch, ...t.dims.slice(1)]);
}

// ---- sessions ----

function cores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

function sessionOptions(threads) {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
}

function parseArgs(argv, flags) {
  const opts = {};
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const [k, inline] = a.slice(2).split(/=(.*)/s);
      if (!(k in flags)) throw new Error(`unknown option --${k}`);
      const v = inline !== undefined ? inline : argv[++i];
      if (v === undefined) throw new Error(`--${k} needs a value`);
      if (Array.isArray(flags[k])) (opts[k] = opts[k] || []).push(v);
      else opts[k] = v;
    } else {
      rest.push(a);
    }
  }
  for (const [k, d] of Object.entries(flags)) if (!(k in opts)) opts[k] = Array.isArray(d) ? [] : d;
  return [opts, rest];
}

function positiveInt(v, what) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${what} must be a positive integer, not ${v}`);
  return n;
}

async function run(argv) {
  const [o, rest] = parseArgs(argv, { in: [], out: [], threads: '' });
  if (rest.length !== 1 || o.in.length === 0 || o.out.length === 0) throw new Error('usage: run MODEL.onnx --in FILE [--in FILE...] --out FILE [--out FILE...]');
  const threads = o.threads ? positiveInt(o.threads, '--threads') : cores();
  const session = await ort.InferenceSession.create(rest[0], sessionOptions(threads));
  if (o.in.length !== session.inputNames.length) throw new Error(`${rest[0]} has ${session.inputNames.length} inputs (${session.inputNames}), ${o.in.length} given`);
  if (o.out.length > session.outputNames.length) throw new Error(`${rest[0]} has ${session.outputNames.length} outputs, ${o.out.length} files given`);
  const feeds = {};
  session.inputNames.forEach((n, i) => (feeds[n] = readTensor(o.in[i]).tensor));
  const results = await session.run(feeds);
  o.out.forEach((f, i) => {
    const name = session.outputNames[i];
    writeTensor(f, name, results[name]);
    console.log(`ort: ${path.basename(rest[0])}: output ${name} [${results[name].dims}] -> ${f}`);
  });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function bench(argv) {
  const [o, rest] = parseArgs(argv, { batch: '64', warmup: '3', runs: '10', threads: '' });
  if (rest.length === 0 || rest.length % 2 !== 0) throw new Error('usage: bench [--batch N] [--warmup N] [--runs N] MODEL.onnx INPUT ...');
  const batch = positiveInt(o.batch, '--batch');
  const warmup = Number(o.warmup);
  const runs = positiveInt(o.runs, '--runs');
  const threads = o.threads ? positiveInt(o.threads, '--threads') : cores();
  for (let i = 0; i < rest.length; i += 2) {
    const [model, input] = [rest[i], rest[i + 1]];
    const session = await ort.InferenceSession.create(model, sessionOptions(threads));
    if (session.inputNames.length !== 1) throw new Error(`${model}: bench feeds one input, the model has ${session.inputNames.length}`);
    const feeds = { [session.inputNames[0]]: repeatRows(readTensor(input).tensor, batch) };
    for (let w = 0; w < warmup; w++) await session.run(feeds);
    const ms = [];
    for (let r = 0; r < runs; r++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const med = median(ms);
    const name = path.basename(model).replace(/\.onnx$/, '');
    console.log(
      `ort ${name} batch=${batch} ms=${med.toFixed(3)} rows_per_s=${((batch * 1000) / med).toFixed(1)} threads=${threads} runs=${runs} min_ms=${Math.min(...ms).toFixed(3)} ort=${ort.env.versions.common}`,
    );
    await session.release();
  }
}

// zoo times the entries of a bench_models.py manifest (NAME, LABEL, MODEL,
// INPUT[,INPUT...] per line; an input FILE@ROWS has its rows repeated to ROWS),
// or those named NAME/LABEL after it, and with --ref DIR writes each entry's first
// output to DIR/NAME-LABEL.ort.npy (the reference the Go benchmark compares with).
// maxWarmup bounds the warm-up runs that --warmup-ms adds.
const maxWarmup = 100;

async function zoo(argv) {
  const [o, rest] = parseArgs(argv, { warmup: '2', 'warmup-ms': '0', runs: '5', threads: '', ref: '' });
  if (rest.length === 0) throw new Error('usage: zoo [--threads N] [--warmup N] [--warmup-ms MS] [--runs N] [--ref DIR] MANIFEST [NAME/LABEL ...]');
  const warmup = Number(o.warmup);
  const warmupMs = Number(o['warmup-ms']);
  const runs = positiveInt(o.runs, '--runs');
  const threads = o.threads ? positiveInt(o.threads, '--threads') : cores();
  const want = new Set(rest.slice(1));
  const lines = fs.readFileSync(rest[0], 'utf8').split('\n').filter((l) => l.trim() !== '');
  for (const line of lines) {
    const [name, label, model, inputs] = line.split('\t');
    if (want.size > 0 && !want.has(`${name}/${label}`)) continue;
    const session = await ort.InferenceSession.create(model, sessionOptions(threads));
    const files = inputs.split(',');
    if (files.length !== session.inputNames.length) throw new Error(`${name}/${label}: ${files.length} inputs given, the model has ${session.inputNames.length}`);
    const feeds = {};
    session.inputNames.forEach((n, i) => {
      const [file, rows] = files[i].split('@');
      const t = readTensor(file).tensor;
      feeds[n] = rows ? repeatRows(t, positiveInt(rows, `${files[i]}: rows`)) : t;
    });
    let results;
    // --warmup runs, then more while under --warmup-ms in all (at most
    // 100), as BenchmarkZoo warms up (zoo_bench_test.go).
    const w0 = process.hrtime.bigint();
    for (let w = 0; w < warmup || (w < maxWarmup && Number(process.hrtime.bigint() - w0) / 1e6 < warmupMs); w++) {
      results = await session.run(feeds);
    }
    const ms = [];
    const cpu = [];
    for (let r = 0; r < runs; r++) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      results = await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1e3);
    }
    if (o.ref) {
      const f = path.join(o.ref, `${name}-${label}.ort.npy`);
      if (!fs.existsSync(f)) writeTensor(f, session.outputNames[0], results[session.outputNames[0]]);
    }
    console.log(`ort ${name}/${label} ms=${median(ms).toFixed(3)} min_ms=${Math.min(...ms).toFixed(3)} cpu_ms=${median(cpu).toFixed(3)} threads=${threads} runs=${runs} ort=${ort.env.versions.common}`);
    await session.release();
  }
}

async function main() {
  const [mode, ...argv] = process.argv.slice(2);
  if (mode === 'run') return run(argv);
  if (mode === 'bench') return bench(argv);
  if (mode === 'zoo') return zoo(argv);
  throw new Error('usage: ort_run.js run|bench|zoo ... (see the comment at the top of containers/onnx/ort_run.js)');
}

main().catch((e) => {
  console.error('ort_run: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
