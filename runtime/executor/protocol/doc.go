// Package protocol is the wire protocol between the worker and the GPU executor.
//
// The worker is the client, the GPU executor process the server.
//
// They talk over a Unix stream socket, in a private directory (mode 0700)
// with the socket itself at mode 0600; see NewSocketDir. Bulk data never goes
// through the socket: it lives in a shared-memory arena (package shm) whose
// file descriptor the client passes once with SCM_RIGHTS (an Arena frame), and
// requests and responses only name regions of it (Ref: offset and length).
//
// Every message is one frame: a 4-byte little-endian length, then one type
// byte, then the payload; the length counts the type byte and the payload and
// is at most MaxFrame. ReadFrame checks those bounds before allocating, and
// every decoder checks every length it reads against what is left, so a
// corrupt or hostile peer gets an error, never a panic or a huge allocation.
//
// A connection goes:
//
//	client                                server
//	Hello{magic, Version, pid}     ->
//	                               <-     Welcome{Version, pid, device, ops, limits, devices[, no-device reason]}
//	                                      (or Reject{Version, message}, then close)
//	Arena{id, size} + fd           ->
//	                               <-     ArenaAck{id, status}
//	Request{id, op, params, arena, inputs, out}  ->
//	                               <-     Response{id, status, message, need, outputs, device, busy}
//	Stats{}                        ->
//	                               <-     StatsReply{per device: batches, bytes, busy, side fills, serving}
//	...
//
// Version 2 added the devices: an executor serves every device it sees,
// named by ordinal in Welcome.Devices; each Response names the device that
// ran the batch and for how long, and Stats asks for each device's counts.
// Version 3 added StatusNeedSide: an op that needs side data the request
// only names, and the executor no longer holds, says so by status, and the
// client sends the request again with the side data (before, the client
// recognised the op's error by its text).
//
// The magic and the version come first in Hello and the version first in
// Welcome and Reject, so peers of different versions can always tell each
// other so: a version mismatch is a *VersionError (errors.Is
// ErrVersionMismatch) on both sides, never a garbled decode.
//
// Requests on one connection are answered in order, one at a time; a client
// wanting concurrency opens several connections (the server runs one
// goroutine per connection and bounds concurrent batches itself).
package protocol
