#!/bin/sh
# Regenerates the GDAL-written copies of the committed crop's band 4 in the layouts the windowed
# reader supports (tests compare every window of each with golang.org/x/image/tiff's decoding).
# Needs gdal_translate (Debian: apt-get install gdal-bin); the files are committed, tests do not run it.
set -eu
cd "$(dirname "$0")"
src=../../../../pipelines/landsat/testdata/LC08_L1TP_195025_20130707_20170503_01_T1/LC08_L1TP_195025_20130707_20170503_01_T1_B4.TIF
t() { out=$1; shift; gdal_translate -q "$@" "$src" "$out"; }
t b4_tiled16_deflate_pred2.TIF -co TILED=YES -co BLOCKXSIZE=16 -co BLOCKYSIZE=16 -co COMPRESS=DEFLATE -co PREDICTOR=2
t b4_tiled32_lzw.TIF -co TILED=YES -co BLOCKXSIZE=32 -co BLOCKYSIZE=32 -co COMPRESS=LZW
t b4_strips5_deflate.TIF -co BLOCKYSIZE=5 -co COMPRESS=DEFLATE
t b4_strips3_lzw_pred2.TIF -co BLOCKYSIZE=3 -co COMPRESS=LZW -co PREDICTOR=2
t b4_uint16_strips1_none.TIF -ot UInt16 -a_nodata none -co BLOCKYSIZE=1
t b4_uint16_tiled16_deflate_big.TIF -ot UInt16 -a_nodata none -co TILED=YES -co BLOCKXSIZE=16 -co BLOCKYSIZE=16 -co COMPRESS=DEFLATE -co ENDIANNESS=BIG
rm -f ./*.aux.xml ./*.IMD
