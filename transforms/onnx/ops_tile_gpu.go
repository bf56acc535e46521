package onnx

import "errors"

// The launch of Tile (ops_tile.go): the CPU's strided copy, on the device;
// where it has more dimensions than the copy kernel takes, tile
// (ops_tile.cu), an input of rank up to six.

var kTile = Module.Kernel("tile")

func (k tileKernel) Launch(d *Device, in, out []DevArray) error {
	_, c, err := k.plan(devMetas(in))
	if err != nil {
		return err
	}
	x, y := in[0], out[0]
	err = d.copyStrided(y.Ptr, x.Ptr, x.Type.Size(), c)
	if !errors.Is(err, ErrOnHost) {
		return err
	}
	args, ok := dims6([]any{x.Ptr, y.Ptr, i64(y.Len()), i64(x.Type.Size()), i64(len(x.Shape))}, y.Shape, x.Shape)
	if !ok {
		return ErrOnHost
	}
	return d.launch(kTile, y.Len(), args...)
}
