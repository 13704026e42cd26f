package ops

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
)

// MaxDictionaryBytes bounds an uploaded dictionary file; the shipped ones
// are about 2.5 MB.
const MaxDictionaryBytes = 16 << 20

// ErrBadDictionary marks an upload that is not a valid dictionary file;
// the message names the line at fault.
var ErrBadDictionary = errors.New("not a valid dictionary file")

// UploadStore stores a parsed dictionary.
type UploadStore interface {
	UploadDictionary(ctx context.Context, d *dict.Dictionary, by store.Actor) (bool, error)
}

// Uploaded says what an upload did.
type Uploaded struct {
	Version int
	Name    string
	Entries int
	Loaded  bool // false: the same dictionary was loaded already
}

// Upload parses a dictionary file (the format of memory/dict) and loads it
// dark: no tenant serves it until it is derived and flipped for that
// tenant. The file is untrusted input: it is size-limited and parsed whole
// before anything is written.
func Upload(ctx context.Context, st UploadStore, r io.Reader, by store.Actor) (Uploaded, error) {
	lr := &io.LimitedReader{R: r, N: MaxDictionaryBytes + 1}
	d, err := dict.Parse(lr)
	if lr.N <= 0 {
		return Uploaded{}, fmt.Errorf("%w: larger than %d bytes", ErrBadDictionary, MaxDictionaryBytes)
	}
	if err != nil {
		return Uploaded{}, fmt.Errorf("%w: %w", ErrBadDictionary, err)
	}
	loaded, err := st.UploadDictionary(ctx, d, by)
	if err != nil {
		if errors.Is(err, store.ErrDictionaryConflict) {
			return Uploaded{}, fmt.Errorf("%w: dictionaries never change once loaded, ship the change as version %d or later", err, d.Version+1)
		}
		return Uploaded{}, err
	}
	return Uploaded{Version: d.Version, Name: d.Name, Entries: d.Len(), Loaded: loaded}, nil
}
