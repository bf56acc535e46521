# From the project's GPU measurement notes, kept here so that the repository holds what docs/benchmarks.md
# describes: the full-size scene the Landsat pipeline and its PyTorch peer (landsat_peer.py) ran on.
# Writes a full-size synthetic Landsat 8 scene: bands 2-5 as uint16 TIFFs (Deflate, tiled 256x256, or
# stripped), 7881x7991 pixels with the tilted no-data frame of a Level-1 scene, and an MTL that is the embedded
# crop's with a new product ID. Needs numpy and tifffile (Debian: python3-tifffile).
# Usage: fullscene.py CROP_MTL OUT_DIR PRODUCT_ID [stripped]
import sys, os, re, numpy as np, tifffile
mtl_src, out, pid = sys.argv[1], sys.argv[2], sys.argv[3]
stripped = len(sys.argv) > 4 and sys.argv[4] == 'stripped'
W, H = 7881, 7991
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
c, s = np.cos(0.23), np.sin(0.23)
u = (xx - W / 2) * c + (yy - H / 2) * s; v = -(xx - W / 2) * s + (yy - H / 2) * c
valid = (np.abs(u) < 0.40 * W) & (np.abs(v) < 0.40 * H)
def field(scale, lo, hi):
    small = rng.random((H // scale + 2, W // scale + 2), dtype=np.float32)
    big = np.kron(small, np.ones((scale, scale), np.float32))[:H, :W]
    return (lo + (hi - lo) * big + rng.normal(0, 200, (H, W))).clip(1, 65535)
for b, (lo, hi) in zip((2, 3, 4, 5), ((7000, 12000), (6000, 12000), (5000, 14000), (8000, 30000))):
    a = np.where(valid, field(64, lo, hi), 0).astype(np.uint16)
    kw = dict(compression='zlib') if stripped else dict(compression='zlib', tile=(256, 256))
    tifffile.imwrite(os.path.join(out, f'{pid}_B{b}.TIF'), a, **kw)
text = open(mtl_src).read()
old = re.search(r'LANDSAT_PRODUCT_ID = "([^"]+)"', text).group(1)
open(os.path.join(out, f'{pid}_MTL.txt'), 'w').write(text.replace(old, pid))
