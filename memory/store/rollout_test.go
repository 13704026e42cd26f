package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/dict"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

var tester = store.Actor{Email: "test"}

func loadBuiltin(t *testing.T, db *store.DB, v int) *dict.Dictionary {
	t.Helper()
	d, err := dict.Builtin(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnsureDictionary(context.Background(), d.Version, d.Name, d.Entries()); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLoadDictionaryRebuildsTheMapping: a version read back from its
// entries maps every word, and derives every row, as the shipped file does.
func TestLoadDictionaryRebuildsTheMapping(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	want := loadBuiltin(t, db, 2)
	got, err := db.LoadDictionary(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Name != want.Name || got.Len() != want.Len() || got.KnownTerms() != want.KnownTerms() {
		t.Fatalf("rebuilt v%d %q: %d words %d terms, want %d and %d", got.Version, got.Name, got.Len(), got.KnownTerms(), want.Len(), want.KnownTerms())
	}
	n := 0
	for w, id := range want.Entries() {
		if g, _ := got.Lookup(w); g != id {
			t.Fatalf("%q: %d, want %d", w, g, id)
		}
		n++
	}
	toks := strings.Fields("caroline's children painted paintings of the lakes zorblax running ran")
	a, af, al := want.Terms(toks)
	b, bf, bl := got.Terms(toks)
	if fmt.Sprint(a, af, al) != fmt.Sprint(b, bf, bl) {
		t.Fatalf("rows differ: %v %v %d vs %v %v %d", a, af, al, b, bf, bl)
	}
	if _, err := db.LoadDictionary(context.Background(), 99); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown version: %v", err)
	}
}

func TestUploadDictionaryIsImmutable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.New(t)) // the upload audit entry is platform-wide
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	parse := func(s string) *dict.Dictionary {
		d, err := dict.Parse(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := parse("perpetuity-dictionary\t7\ttiny\n[stopwords]\nthe\n[terms]\ngarden\npaint\n[forms]\npainted\tpaint\n")
	for i, c := range []struct {
		d      *dict.Dictionary
		loaded bool
		err    error
	}{
		{first, true, nil},
		{first, false, nil},
		{parse("perpetuity-dictionary\t7\ttiny\n[terms]\ngarden\npaint\n"), false, store.ErrDictionaryConflict},
		{parse("perpetuity-dictionary\t7\tother\n[stopwords]\nthe\n[terms]\ngarden\npaint\n[forms]\npainted\tpaint\n"), false, store.ErrDictionaryConflict},
	} {
		loaded, err := db.UploadDictionary(ctx, c.d, tester)
		if loaded != c.loaded || !errors.Is(err, c.err) {
			t.Fatalf("upload %d: loaded %v err %v, want %v %v", i, loaded, err, c.loaded, c.err)
		}
	}
	var n int
	if err := ownerOf(t, db).QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'dict.upload' AND tenant_id IS NULL`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d upload audit entries: %v", n, err)
	}
}

// TestCaptureMustCoverEveryKeptVersion: once a derivation has started, a
// capture whose rows miss the new version is refused at commit (and leaves
// nothing); with rows for both it is stored; an item stored with no row at
// all is left to the integrity check.
func TestCaptureMustCoverEveryKeptVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	loadBuiltin(t, db, 2)
	nt, err := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := db.EnsureConversation(ctx, nt.TenantID, nt.UserID, "c", "")
	capture := func(fp string, rows ...store.RetrievalRow) error {
		it := item(fp, 1)
		it.Rows = rows
		_, err := db.Capture(ctx, store.Capture{TenantID: nt.TenantID, UserID: nt.UserID, ConversationID: conv, Role: "user",
			Fingerprint: []byte(fp), CreatedAt: time.Now(), ClockAdvance: 1, Items: []store.CaptureItem{it}})
		return err
	}
	v1 := store.RetrievalRow{DictVersion: 1, TermIDs: []int32{1}, Freqs: []int16{1}, Length: 1}
	v2 := store.RetrievalRow{DictVersion: 2, TermIDs: []int32{5}, Freqs: []int16{1}, Length: 1}
	if err := capture("before", v1); err != nil {
		t.Fatal(err)
	}
	if vs, err := db.CaptureVersions(ctx, nt.TenantID); err != nil || fmt.Sprint(vs) != "[1]" {
		t.Fatalf("versions before: %v %v", vs, err)
	}
	if _, err := db.StartDerive(ctx, nt.TenantID, 2, tester); err != nil {
		t.Fatal(err)
	}
	if vs, _ := db.CaptureVersions(ctx, nt.TenantID); fmt.Sprint(vs) != "[1 2]" {
		t.Fatalf("versions during the derivation: %v", vs)
	}
	err = capture("stale", v1)
	if !store.IsDictVersionsChanged(err) {
		t.Fatalf("a capture without a v2 row: %v", err)
	}
	var messages, births int
	owner := ownerOf(t, db)
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM messages WHERE tenant_id = $1`, nt.TenantID).Scan(&messages); err != nil || messages != 1 {
		t.Fatalf("the refused capture left %d messages (%v)", messages, err)
	}
	if err := capture("fresh", v1, v2); err != nil {
		t.Fatal(err)
	}
	if err := capture("rowless"); err != nil {
		t.Fatalf("an item without rows: %v", err)
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM item_births b JOIN items i ON i.tenant_id = b.tenant_id AND i.id = b.item_id
		AND i.tau = b.tau AND i.novelty = b.novelty AND i.born_clock = b.born_clock WHERE b.tenant_id = $1`, nt.TenantID).Scan(&births); err != nil || births != 3 {
		t.Fatalf("%d birth records for 3 items (%v)", births, err)
	}
}

func TestDeriveLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	loadBuiltin(t, db, 2)
	nt, _ := db.CreateTenantWith(ctx, "acme", "alice", store.TenantOptions{Dict: 1})
	if _, err := db.StartDerive(ctx, nt.TenantID, 2, tester); err != nil {
		t.Fatal(err)
	}
	a := store.Lease{Owner: "a", TTL: time.Minute}
	b := store.Lease{Owner: "b", TTL: time.Minute}
	if r, err := db.ClaimDerive(ctx, nt.TenantID, 2, a); err != nil || r.LeaseOwner != "a" {
		t.Fatalf("first claim: %+v %v", r, err)
	}
	if r, err := db.ClaimDerive(ctx, nt.TenantID, 2, b); !errors.Is(err, store.ErrLeaseHeld) || r.LeaseUntil == nil {
		t.Fatalf("second claim: %+v %v", r, err)
	}
	if _, err := db.WriteDerived(ctx, nt.TenantID, 2, b, nil, 0); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a write without the lease: %v", err)
	}
	if err := db.ReleaseDerive(ctx, nt.TenantID, 2, a); err != nil {
		t.Fatal(err)
	}
	if r, err := db.ClaimDerive(ctx, nt.TenantID, 2, b); err != nil || r.LeaseOwner != "b" {
		t.Fatalf("claim after release: %+v %v", r, err)
	}
	r, missing, err := db.FinishDerive(ctx, nt.TenantID, 2, b)
	if err != nil || missing != 0 || r.State != store.RolloutReady {
		t.Fatalf("finish an empty tenant: %+v %d %v", r, missing, err)
	}
	if r, err := db.ClaimDerive(ctx, nt.TenantID, 2, a); err != nil || r.State != store.RolloutReady {
		t.Fatalf("claim a ready rollout: %+v %v", r, err)
	}
}

// TestFlipAllIsAllOrNothing: one tenant not ready stops the flip of all.
func TestFlipAllIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.New(t)) // FlipAll walks every tenant of the database
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	loadBuiltin(t, db, 1)
	loadBuiltin(t, db, 2)
	ready, _ := db.CreateTenantWith(ctx, "ready", "a", store.TenantOptions{Dict: 1})
	late, _ := db.CreateTenantWith(ctx, "late", "b", store.TenantOptions{Dict: 1})
	l := store.Lease{Owner: "w", TTL: time.Minute}
	if _, err := db.StartDerive(ctx, ready.TenantID, 2, tester); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimDerive(ctx, ready.TenantID, 2, l); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.FinishDerive(ctx, ready.TenantID, 2, l); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FlipAll(ctx, 2, tester); !errors.Is(err, store.ErrNotDerived) {
		t.Fatalf("flip all with a tenant not derived: %v", err)
	}
	for _, id := range []int64{ready.TenantID, late.TenantID} {
		if st, _ := db.DictStatus(ctx, id); st.Active != 1 {
			t.Fatalf("tenant %d flipped by a refused flip of all", id)
		}
	}
	if _, err := db.StartDerive(ctx, late.TenantID, 2, tester); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimDerive(ctx, late.TenantID, 2, l); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.FinishDerive(ctx, late.TenantID, 2, l); err != nil {
		t.Fatal(err)
	}
	reps, err := db.FlipAll(ctx, 2, tester)
	if err != nil || len(reps) != 2 || reps[0].Seq == 0 || reps[1].Seq == 0 {
		t.Fatalf("flip all: %+v %v", reps, err)
	}
	for _, id := range []int64{ready.TenantID, late.TenantID} {
		st, _ := db.DictStatus(ctx, id)
		if st.Active != 2 || len(st.Rollouts) != 1 || st.Rollouts[0].Version != 1 || st.Rollouts[0].State != store.RolloutReady {
			t.Fatalf("tenant %d after flip all: %+v", id, st)
		}
	}
}
