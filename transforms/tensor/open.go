package tensor

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
)

// Opener opens a file for reading by name: a local path, or a URL such as
// gs://bucket/object where the opener knows its scheme.
type Opener func(ctx context.Context, name string) (io.ReadCloser, error)

var opener atomic.Pointer[Opener]

// SetOpener makes every reader of this package (ReadIDX and the decode
// step, LoadMLP, the decode step's stand-in) open files with o; nil restores
// the default, which opens local paths only. The package imports no Beam: a
// pipeline that reads from Cloud Storage installs an opener over Beam's
// filesystems once, in its main package's init, which its workers run too
// (pipelines/fashion installs job.OpenRead).
func SetOpener(o Opener) {
	if o == nil {
		opener.Store(nil)
		return
	}
	opener.Store(&o)
}

// OpenFile opens name with the opener SetOpener installed, or as a local
// file. A URL (scheme://...) without an opener is an error that says how to
// read it.
func OpenFile(ctx context.Context, name string) (io.ReadCloser, error) {
	if o := opener.Load(); o != nil {
		return (*o)(ctx, name)
	}
	if scheme, _, ok := strings.Cut(name, "://"); ok && !strings.ContainsAny(scheme, "/\\") {
		return nil, fmt.Errorf("%s: no opener for %s:// paths in this program (tensor.SetOpener installs one, e.g. over Beam's filesystems)", name, scheme)
	}
	return os.Open(name)
}
