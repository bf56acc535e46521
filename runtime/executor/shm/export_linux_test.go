package shm

// UseMemfd switches memfd arenas on or off (off: the file fallback), for the
// tests of the fallback.
func UseMemfd(on bool) { useMemfd = on }
