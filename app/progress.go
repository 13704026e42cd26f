package app

import (
	"io"
	"os"
)

// progressOut is where a long command's progress line goes: stderr when it
// is a terminal, nowhere when it is a file or a pipe, since a log would
// fill with carriage-return lines. A writer that is not a file (tests,
// programs embedding the commands) gets the progress as it is.
func progressOut(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return io.Discard
	}
	return w
}
