# The PyTorch peer of beamgpu's GPU benchmark (make gpu-bench-peer): PyTorch on the same GPU, for the
# shapes of 'beamgpu-executor bench' at full size, to compare with in the same session. From the project's
# shared GPU notes (gpu/torch_peer.py), kept here so that the repository holds what its make targets run.
# PyTorch on the same GPU, for the shapes of beamgpu's GPU steps: the ceilings (copy bandwidth, H2D/D2H) and the
# reference implementations of toa_ndvi, dense, MLP and kNN (cdist + topk), timed with CUDA events.
# Usage: python3 torch_peer.py [FASHION_DIR [PREDICTIONS.npy]]
import sys, time, gzip, os, numpy as np, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device('cuda')
print('torch', torch.__version__, torch.cuda.get_device_name(0))
def bench(fn, reps=10, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
    return float(np.median(ts))
def wall(fn, reps=5, warm=1):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t0)
    return float(np.median(ts))
# ceilings
n = 1 << 30
a = torch.empty(n, dtype=torch.uint8, device=dev); b = torch.empty_like(a); a.random_(0, 255)
t = bench(lambda: b.copy_(a)); print(f'D2D copy 1 GiB: {2*n/t/1e9:.0f} GB/s (read+write)')
h = torch.empty(n, dtype=torch.uint8).pin_memory(); h.random_(0, 255)
t = bench(lambda: a.copy_(h, non_blocking=True)); print(f'H2D pinned 1 GiB: {n/t/1e9:.1f} GB/s')
t = bench(lambda: h.copy_(a, non_blocking=True)); print(f'D2H pinned 1 GiB: {n/t/1e9:.1f} GB/s')
hp = torch.empty(n, dtype=torch.uint8); hp.random_(0, 255)
t = bench(lambda: a.copy_(hp), reps=5); print(f'H2D pageable 1 GiB: {n/t/1e9:.1f} GB/s')
del a, b, h, hp
# toa_ndvi 4096x4096x4 bands: uint16 DN in, 5 float32 planes out
W = 4096; g = torch.Generator().manual_seed(1)
dn = torch.randint(5000, 35000, (4, W, W), dtype=torch.int32, generator=g).to(torch.int16)
dnd = dn.to(dev)
s = np.sin(np.radians(58.99675180))
def toa_ndvi(x):
    xf = x.to(torch.int32).to(torch.float32)  # int16 view; values < 32768 here
    r = (2e-5 * xf - 0.1) / s
    r = torch.where(x == 0, torch.nan, r)
    nd = (r[3] - r[2]) / (r[3] + r[2])
    return r, nd
t = bench(lambda: toa_ndvi(dnd)); by = W*W*(4*2+5*4)
print(f'toa_ndvi device-resident: {t*1e3:.2f} ms, {by/t/1e9:.0f} GB/s of minimum traffic')
def toa_host():
    r, nd = toa_ndvi(dn.to(dev)); return r.cpu(), nd.cpu()
t = wall(toa_host); print(f'toa_ndvi host->host (pageable): {t*1e3:.1f} ms')
# dense 8192x784 -> 256 relu
x = torch.rand(8192, 784, device=dev); w = torch.randn(784, 256, device=dev) * .05; bb = torch.randn(256, device=dev) * .01
t = bench(lambda: torch.relu(x @ w + bb)); print(f'dense 8192x784->256 device-resident fp32: {t*1e3:.3f} ms, {2*8192*784*256/t/1e9:.0f} GFLOP/s')
xh = x.cpu()
t = wall(lambda: torch.relu(xh.to(dev) @ w + bb).cpu(), reps=10); print(f'dense host->host: {t*1e3:.2f} ms')
# mlp 10000 x 784-256-128-10
ws = [torch.randn(784, 256, device=dev)*.05, torch.randn(256, 128, device=dev)*.05, torch.randn(128, 10, device=dev)*.05]
xm = torch.rand(10000, 784)
def mlp(xx):
    h = torch.relu(xx @ ws[0]); h = torch.relu(h @ ws[1]); return torch.softmax(h @ ws[2], 1).argmax(1)
xmd = xm.to(dev)
t = bench(lambda: mlp(xmd)); print(f'mlp 10000 device-resident: {t*1e3:.3f} ms')
t = wall(lambda: mlp(xm.to(dev)).cpu(), reps=10); print(f'mlp 10000 host->host: {t*1e3:.2f} ms')
# knn 10000 vs 60000 x 784, k=5, on random data and on Fashion-MNIST
def idx(path):
    op = gzip.open if path.endswith('.gz') else open
    with op(path, 'rb') as f: data = f.read()
    nd = data[3]; dims = [int.from_bytes(data[4+4*i:8+4*i], 'big') for i in range(nd)]
    return np.frombuffer(data, dtype=np.uint8, offset=4+4*nd).reshape(dims)
def knn(q, r, rl, k=5):
    d2 = (q*q).sum(1, keepdim=True) - 2 * q @ r.T + (r*r).sum(1)[None, :]
    dist, ix = torch.topk(d2, k, dim=1, largest=False)
    dist = dist.clamp_min(0).sqrt(); wts = 1.0 / dist.clamp_min(1e-12)
    votes = torch.zeros(q.shape[0], 10, device=q.device).scatter_add_(1, rl[ix], wts)
    return votes.argmax(1)
qr = torch.rand(10000, 784, device=dev); rr = torch.rand(60000, 784, device=dev); rl = torch.randint(0, 10, (60000,), device=dev)
t = bench(lambda: knn(qr, rr, rl), reps=5); print(f'knn random 10000x60000x784 device-resident (matmul form): {t*1e3:.1f} ms, {2*1e4*6e4*784/t/1e12:.1f} TFLOP/s')
t = bench(lambda: torch.topk(torch.cdist(qr, rr), 5, dim=1, largest=False), reps=5); print(f'knn random cdist+topk device-resident: {t*1e3:.1f} ms')
d = sys.argv[1] if len(sys.argv) > 1 else ''
save = sys.argv[2] if len(sys.argv) > 2 else ''
if d and os.path.exists(os.path.join(d, 'train-images-idx3-ubyte')):
    tr = idx(os.path.join(d, 'train-images-idx3-ubyte')).reshape(60000, -1).astype(np.float32) / 255
    trl = idx(os.path.join(d, 'train-labels-idx1-ubyte.gz')).astype(np.int64)
    te = idx(os.path.join(d, 't10k-images-idx3-ubyte.gz')).reshape(10000, -1).astype(np.float32) / 255
    tel = idx(os.path.join(d, 't10k-labels-idx1-ubyte.gz')).astype(np.int64)
    def full():
        q = torch.from_numpy(te).to(dev); r = torch.from_numpy(tr).to(dev); l = torch.from_numpy(trl).to(dev)
        return knn(q, r, l).cpu().numpy()
    t0 = time.perf_counter(); p = full(); torch.cuda.synchronize(); t1 = time.perf_counter()
    t = wall(full, reps=5)
    print(f'knn Fashion full (host arrays -> predictions on host): first {1e3*(t1-t0):.0f} ms, median {t*1e3:.1f} ms, accuracy {(p==tel).mean():.4f}')
    if save: np.save(save, p)
# The ONNX models of transforms/onnx/testdata/models (containers/onnx/export_models.py builds them, seeded), in
# PyTorch eager at batch 256, host to host (the input from a host array, the logits back in one): the peer of
# 'BEAMGPU_BENCH_ONNX=<model> beamgpu-executor bench --steps=onnx' (containers/gpu/onnx_bench.sh prints both).
# Needs torchvision and onnx (export_models imports them); lines 'peer onnx NAME MS' are for the script.
try:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'onnx'))
    import export_models
except ImportError as e:
    print(f'onnx models: skipped ({e}: install python3-torchvision and python3-onnx)')
else:
    for name, module, x in export_models.make_models():
        module.eval().to(dev)
        xb = torch.from_numpy(np.repeat(x[:1], 256, axis=0))
        with torch.no_grad():
            t = wall(lambda: module(xb.to(dev)).cpu(), reps=10, warm=3)
        print(f'peer onnx {name} {t*1e3:.3f}')
        print(f'onnx {name} batch 256 host->host (PyTorch eager): {t*1e3:.2f} ms')
