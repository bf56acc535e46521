//go:build !unix

package files

import "os"

// openFlags: elsewhere than on Unix, a plain open (the Stat before it
// refuses what is not a regular file).
const openFlags = os.O_RDONLY
