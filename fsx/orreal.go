package fsx

// OrReal returns fsys, or the real disk when fsys is nil. Every public
// function of swampj that takes an FS accepts nil for the real one.
func OrReal(fsys FS) FS {
	if fsys == nil {
		return Real()
	}
	return fsys
}
