// Package shm is the shared memory that carries the executor's bulk data.
//
// The client creates an Arena: anonymous memory from memfd_create(2), with no
// name in any filesystem, so no other process can open it, nothing is left
// behind if either side dies, and /dev/shm's size (64 MiB in a Docker
// container by default) does not limit it; only its file descriptor lives on.
// Its pages are reserved when it is created or grown, so memory the system
// cannot give is an error then (ErrNoMemory), not a SIGBUS in whoever writes
// a batch. (Kernels without memfd get a file in /dev/shm created with O_EXCL
// at mode 0600 and unlinked at once.) The descriptor goes to the
// executor over the socket (SCM_RIGHTS) and both sides mmap it MAP_SHARED:
// the client writes inputs into it, the executor reads them and writes its
// outputs into it, and the client reads those, with no copy through the
// socket or the kernel.
//
// Bytes and Slice return zero-copy views of the mapping; they are valid
// until the arena is grown (Grow remaps it, possibly elsewhere) or closed.
// Allocator lays regions out within an arena (a bump allocator with 64-byte
// alignment, reset per batch); when a batch does not fit, the client grows
// the arena and sends the descriptor again.
//
// Copy is how batches go in and out of an arena: the built-in copy, on up to
// 8 cores for the large ones (one core copies at about a fifth of what a
// PCIe 5 bus moves).
//
// Linux only: on other systems Create and Map return ErrUnsupported.
package shm
