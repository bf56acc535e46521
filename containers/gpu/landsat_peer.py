# From the project's GPU measurement notes, kept here so that the repository holds what docs/benchmarks.md
# describes.
# The PyTorch peer of the Landsat pipeline on one scene written by fullscene.py: read bands 2-5, TOA
# reflectance and NDVI on the GPU (DN 0 is no-data), write the 5 planes as .npy. Prints each phase's time.
# Usage: landsat_peer.py SCENE_DIR PRODUCT_ID OUT_DIR
import sys, os, time, numpy as np, tifffile, torch
S, pid, out = sys.argv[1:4]; os.makedirs(out, exist_ok=True)
s = np.sin(np.radians(58.99675180)); dev = 'cuda'   # the crop's SUN_ELEVATION; M=2e-5, A=-0.1 for bands 2-5
t0 = time.perf_counter()
bands = [tifffile.imread(f'{S}/{pid}_B{b}.TIF') for b in (2, 3, 4, 5)]
t1 = time.perf_counter()
x = torch.from_numpy(np.stack(bands).astype(np.int32)).to(dev)
r = torch.where(x == 0, torch.nan, (2e-5 * x.float() - 0.1) / s)
nd = (r[3] - r[2]) / (r[3] + r[2]); planes = [p.cpu().numpy() for p in r] + [nd.cpu().numpy()]
torch.cuda.synchronize(); t2 = time.perf_counter()
for name, a in zip(('B2', 'B3', 'B4', 'B5', 'ndvi'), planes): np.save(f'{out}/{name}.npy', a)
t3 = time.perf_counter()
print(f'read {t1-t0:.2f} s, TOA+NDVI on the GPU host to host {t2-t1:.2f} s, write {t3-t2:.2f} s, total {t3-t0:.2f} s')
