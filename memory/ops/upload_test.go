package ops_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/ops"
	"github.com/perpetuity/perpetuity/memory/store"
)

// keep is an UploadStore that keeps what it is given.
type keep struct{ d *dict.Dictionary }

func (k *keep) UploadDictionary(_ context.Context, d *dict.Dictionary, _ store.Actor) (bool, error) {
	k.d = d
	return true, nil
}

// FuzzUpload feeds the console's and the command line's upload arbitrary
// files: it either refuses them as ErrBadDictionary, storing nothing, or
// stores a dictionary that maps each of its words to its listed id.
func FuzzUpload(f *testing.F) {
	f.Add([]byte("perpetuity-dictionary\t3\ttiny\n[stopwords]\nthe\n[terms]\ngarden\npaint\n[forms]\npainted\tpaint\n"))
	f.Add([]byte("perpetuity-dictionary\t3\ttiny\n[forms]\npainted\tpaint\n[terms]\npaint\n"))
	f.Add([]byte("perpetuity-dictionary\t0\tzero\n"))
	f.Add([]byte("perpetuity-dictionary\t3\tx\n[terms]\nGarden\n"))
	f.Add([]byte("perpetuity-dictionary\t3\tx\n[terms]\ncaf\xc3\xa9\nna\xefve\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		k := &keep{}
		up, err := ops.Upload(context.Background(), k, bytes.NewReader(b), store.Actor{Email: "fuzz"})
		if err != nil {
			if !errors.Is(err, ops.ErrBadDictionary) || k.d != nil {
				t.Fatalf("refused with %v, stored %v", err, k.d != nil)
			}
			return
		}
		if k.d == nil || up.Version != k.d.Version || up.Entries != k.d.Len() {
			t.Fatalf("accepted %+v, stored %v", up, k.d)
		}
		for w, id := range k.d.Entries() {
			got, ok := k.d.Lookup(w)
			if got != id || ok != (id != dict.NoTerm) {
				t.Fatalf("%q maps to %d (%v), listed as %d", w, got, ok, id)
			}
		}
	})
}
