package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/arena"
	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/guard"
)

// TestForgetOnPanic: an in-place catch-up that panics leaves the resident
// to load afresh (no half-applied arena kept at the old watermark), and
// the panic goes on to the caller's recovery; one that returns changes
// nothing.
func TestForgetOnPanic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		panics bool
	}{{"panics", true}, {"returns", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs := &residents{}
			old := arena.New(arena.Options{})
			r := &resident{arena: old, watermark: 10, dict: 3, tip: true}
			err := guard.Run(func() error {
				r.mu.Lock()
				defer r.mu.Unlock()
				defer rs.forgetOnPanic(r)
				if tc.panics {
					var m map[int]int
					m[1]++
				}
				return nil
			})
			var p *guard.Panic
			if errors.As(err, &p) != tc.panics {
				t.Fatalf("err = %v, want a panic: %v", err, tc.panics)
			}
			if !r.mu.TryLock() {
				t.Fatal("the resident stayed locked")
			}
			r.mu.Unlock()
			forgot := r.dict == 0 && r.watermark == 0 && !r.tip && r.arena != old && r.arena != nil
			if forgot != tc.panics {
				t.Fatalf("dict %d watermark %d tip %v, new arena %v; want forgotten: %v", r.dict, r.watermark, r.tip, r.arena != old, tc.panics)
			}
		})
	}
}

// panickyVersions panics loading a dictionary the first time.
type panickyVersions struct{ calls int }

func (p *panickyVersions) CaptureVersions(context.Context, int64) ([]int, error) { return nil, nil }

func (p *panickyVersions) LoadDictionary(context.Context, int) (*dict.Dictionary, error) {
	p.calls++
	if p.calls == 1 {
		var d *dict.Dictionary
		_ = *d // a nil dereference, as a bug in a load would be
	}
	return &dict.Dictionary{}, nil
}

// TestDictionaryLoadPanics: a load that panics fails its caller and frees
// the slot, so the next caller loads again instead of waiting for ever on
// a slot no one will fill.
func TestDictionaryLoadPanics(t *testing.T) {
	t.Parallel()
	st := &panickyVersions{}
	ds := &dictionaries{st: st, by: map[int]*dictSlot{}}
	var p *guard.Panic
	if _, err := ds.get(context.Background(), 1); !errors.As(err, &p) {
		t.Fatalf("first load: err %v, want the panic as an error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := ds.get(ctx, 1)
	if err != nil || d == nil || st.calls != 2 {
		t.Fatalf("second load: %v, %v after %d loads; want a dictionary from a second load", d, err, st.calls)
	}
}
