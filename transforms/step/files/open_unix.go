//go:build unix

package files

import (
	"os"
	"syscall"
)

// openFlags opens without blocking: opening a named pipe for reading
// otherwise waits for a writer, forever if none comes.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
