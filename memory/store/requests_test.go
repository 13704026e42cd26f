package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/perpetuity/perpetuity/memory/store"
)

// TestRecordRequestsBatch: one batch holds several tenants' records, each
// kept under its own tenant with the time it was given (now() without
// one), its inspection where it has one; a batch one record of which the
// database refuses stores none of them.
func TestRecordRequestsBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	a, err := db.CreateTenantWith(ctx, "records-a", "alice", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateTenantWith(ctx, "records-b", "bob", store.TenantOptions{Dict: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(tenant, user int64, rid string, at time.Time) store.RequestRecord {
		return store.RequestRecord{TenantID: tenant, RequestID: rid, UserID: user, Dialect: "openai-chat",
			Provider: "openai", Model: "gpt-4o-mini", Status: 200, DurationMS: 1.5, At: at}
	}
	t1 := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
	t2 := t1.Add(40 * time.Millisecond)
	inspectedB := rec(b.TenantID, b.UserID, "b-1", t2)
	inspectedB.Inspection = &store.Inspection{Question: "where is the ferry", Reply: "at platform nine"}
	inspectedB.InspectRetention, inspectedB.PruneInspections = time.Hour, true
	prunedA := rec(a.TenantID, a.UserID, "a-2", time.Time{})
	prunedA.InspectRetention, prunedA.PruneInspections = time.Hour, true
	before := time.Now()
	if err := db.RecordRequests(ctx, []store.RequestRecord{rec(a.TenantID, a.UserID, "a-1", t1), inspectedB, prunedA}); err != nil {
		t.Fatal(err)
	}

	rowsA, err := db.Requests(ctx, a.TenantID, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(rowsA) != 2 {
		t.Fatalf("tenant a lists %d requests, want its 2", len(rowsA))
	}
	// Newest first: a-2 took the batch's now().
	if got := rowsA[1].At; !got.Equal(t1) {
		t.Errorf("a-1 at %v, want the time it was given, %v", got, t1)
	}
	if got := rowsA[0].At; got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("a-2, given no time, at %v, want about now (%v)", got, before)
	}
	rowsB, err := db.Requests(ctx, b.TenantID, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(rowsB) != 1 || !rowsB[0].Inspected || rowsB[0].Question != "where is the ferry" || !rowsB[0].At.Equal(t2) {
		t.Fatalf("tenant b lists %+v, want b-1 inspected at %v", rowsB, t2)
	}

	// The third record names no tenant there is: the batch fails whole.
	err = db.RecordRequests(ctx, []store.RequestRecord{rec(a.TenantID, a.UserID, "a-3", t2), rec(b.TenantID, b.UserID, "b-2", t2),
		rec(b.TenantID+1_000_000, 1, "nowhere", t2)})
	if err == nil {
		t.Fatal("a batch with a record of no tenant was stored")
	}
	for _, tc := range []struct {
		tenant int64
		want   int
	}{{a.TenantID, 2}, {b.TenantID, 1}} {
		rows, err := db.Requests(ctx, tc.tenant, 0, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != tc.want {
			t.Errorf("tenant %d lists %d requests after the refused batch, want %d", tc.tenant, len(rows), tc.want)
		}
	}
}
