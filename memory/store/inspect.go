package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Inspection is what the provider received for one proxied request and
// what came back, as the request inspector shows it (migration 16). It is
// built from the frame, the tool loop and the reply, never from the
// request's headers or body: no key of any kind can be in it.
type Inspection struct {
	Question      string `json:"question"` // the live message
	FrameTokens   int    `json:"frame_tokens"`
	FrameItems    int    `json:"frame_items"`
	HarnessTokens int    `json:"harness_tokens"` // the provider's input count less the frame's, per round
	Trimmed       bool   `json:"trimmed"`
	// LeftOut counts every candidate the budget left out; Items lists the
	// best of them after the shown ones.
	LeftOut int              `json:"left_out"`
	Turns   []InspectTurn    `json:"turns"` // the frame as the provider saw it
	Items   []InspectItem    `json:"items"`
	Tools   []InspectToolRun `json:"tools,omitempty"`
	// The provider's answer: the status of its last round (0 when it was
	// not reached), how long its first round took to answer, how many
	// rounds the memory tools took.
	ProviderStatus int     `json:"provider_status"`
	ProviderMS     float64 `json:"provider_ms"`
	Rounds         int     `json:"rounds"`
	Reply          string  `json:"reply"`
	Interrupted    bool    `json:"interrupted,omitempty"`
}

// InspectTurn is one rendered message of the frame.
type InspectTurn struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// InspectItem is one candidate of the frame: shown, or left out by the
// budget. Reasons are memory.Reason codes (match, neighbour, chain, date,
// mandatory, recent, live, warm).
type InspectItem struct {
	ID      int64    `json:"id"`
	ConvID  int64    `json:"conv,omitempty"`
	UserID  int64    `json:"user,omitempty"`
	Score   float64  `json:"score"`
	Rank    int      `json:"rank"`
	Heat    float64  `json:"heat"`
	Reasons []string `json:"reasons"`
	Shown   bool     `json:"shown"`
	Tokens  int      `json:"tokens"`
	Role    string   `json:"role,omitempty"`
	Speaker string   `json:"speaker,omitempty"`
	Excerpt string   `json:"excerpt,omitempty"`
}

// InspectToolRun is one memory tool call and its result.
type InspectToolRun struct {
	Round  int     `json:"round"`
	Name   string  `json:"name"`
	Args   string  `json:"args"`
	Result string  `json:"result"`
	MS     float64 `json:"ms"`
	Failed bool    `json:"failed,omitempty"`
}

// index is the item index of the record: each item once, and apart
// those that get index rows (migration 000025): another user's, and one
// whose owner the frame did not read (a candidate left out before its
// text was read, or purged meanwhile), which nothing says is the
// asker's. A record of no memory user has no own items.
func (in *Inspection) index(asker int64) (ids []int64, shown []bool, others []int64, othersShown []bool) {
	seen := make(map[int64]bool, len(in.Items))
	ids, shown = make([]int64, 0, len(in.Items)), make([]bool, 0, len(in.Items))
	others, othersShown = []int64{}, []bool{}
	for _, it := range in.Items {
		if seen[it.ID] {
			continue
		}
		seen[it.ID] = true
		ids = append(ids, it.ID)
		shown = append(shown, it.Shown)
		if asker == 0 || it.UserID != asker {
			others = append(others, it.ID)
			othersShown = append(othersShown, it.Shown)
		}
	}
	return ids, shown, others, othersShown
}

// RequestRow is one proxied request as the console lists it. Question is
// empty and Inspected false when no record was kept (expired, purged,
// a probe, or the inspector off).
type RequestRow struct {
	ID          int64
	At          time.Time
	UserID      int64
	User        string
	Dialect     string
	Provider    string
	Model       string
	Status      int
	DurationMS  float64
	FrameItems  int
	FrameTokens int
	TokensIn    int
	TokensOut   int
	Inspected   bool
	Question    string
}

const requestColumns = `r.id, r.at, coalesce(r.user_id, 0), coalesce(u.name, ''), r.dialect, r.provider, r.model, r.status,
		r.duration_ms, r.frame_items, r.frame_tokens, r.tokens_in, r.tokens_out, p.request_id IS NOT NULL,
		coalesce(p.question, '')`

const requestFrom = `
	FROM requests r
	LEFT JOIN request_inspections p ON p.tenant_id = r.tenant_id AND p.request_id = r.id
	LEFT JOIN memory_users u ON u.tenant_id = r.tenant_id AND u.id = r.user_id`

const (
	listRequestsSQL = `SELECT ` + requestColumns + requestFrom + `
	WHERE r.tenant_id = $1 AND ($2::bigint = 0 OR r.user_id = $2)
	ORDER BY r.at DESC, r.id DESC LIMIT $3`
	getRequestSQL = `SELECT ` + requestColumns + `, coalesce(p.record, 'null')` + requestFrom + `
	WHERE r.tenant_id = $1 AND r.id = $2`
	// The owner's own records carry the item in their arrays, read newest
	// first along request_inspections_user (every record of the owner's
	// within the retention when the item is in fewer than $3 of them: a
	// console page, not a request's path); another user's records that
	// named it have an index row (migration 000025). An own record may
	// index the item too (its owner unread at the time), so the index half
	// leaves the owner's records to the first. An item no longer stored
	// has no owner, and its records went with it.
	framesOfItemSQL = `WITH owner AS (SELECT i.user_id FROM items i WHERE i.tenant_id = $1 AND i.id = $2)
	SELECT request_id, at, shown, user_id, question FROM (
		(SELECT p.request_id, p.at, coalesce(p.item_shown[array_position(p.item_ids, $2::bigint)], false) AS shown, p.user_id, p.question
		 FROM request_inspections p
		 WHERE p.tenant_id = $1 AND p.user_id = (SELECT user_id FROM owner)
		   AND $2::bigint = ANY (p.item_ids)
		 ORDER BY p.at DESC, p.request_id DESC LIMIT $3)
		UNION ALL
		(SELECT x.request_id, p.at, x.shown, p.user_id, p.question
		 FROM request_inspection_items x
		 JOIN request_inspections p ON p.tenant_id = x.tenant_id AND p.request_id = x.request_id
		 WHERE x.tenant_id = $1 AND x.item_id = $2
		   AND p.user_id IS DISTINCT FROM (SELECT user_id FROM owner)
		 ORDER BY p.at DESC, x.request_id DESC LIMIT $3)) f
	ORDER BY at DESC, request_id DESC LIMIT $3`
)

// Requests lists the tenant's latest proxied requests, newest first; a
// userID other than 0 keeps that memory user's.
func (db *DB) Requests(ctx context.Context, tenantID, userID int64, limit int) ([]RequestRow, error) {
	var out []RequestRow
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, listRequestsSQL, tenantID, userID, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[RequestRow])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	return out, nil
}

// InspectedRequest is one request with its record (nil when none is kept).
type InspectedRequest struct {
	RequestRow
	Record *Inspection
}

// Request reads one request of the tenant by its id; ErrNotFound when the
// tenant has none such.
func (db *DB) Request(ctx context.Context, tenantID, id int64) (InspectedRequest, error) {
	var out InspectedRequest
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		var doc []byte
		r := &out.RequestRow
		err := tx.QueryRow(ctx, getRequestSQL, tenantID, id).Scan(&r.ID, &r.At, &r.UserID, &r.User, &r.Dialect, &r.Provider,
			&r.Model, &r.Status, &r.DurationMS, &r.FrameItems, &r.FrameTokens, &r.TokensIn, &r.TokensOut, &r.Inspected, &r.Question, &doc)
		if err != nil {
			return notFound(err)
		}
		if r.Inspected {
			out.Record = &Inspection{}
			if err := json.Unmarshal(doc, out.Record); err != nil {
				return fmt.Errorf("inspection record: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return InspectedRequest{}, fmt.Errorf("request %d: %w", id, err)
	}
	return out, nil
}

// ItemFrame is one kept record an item was in: shown, or left out.
type ItemFrame struct {
	RequestID int64
	At        time.Time
	Shown     bool
	UserID    int64
	Question  string
}

// FramesOfItem lists the kept records an item was a candidate in, newest
// first.
func (db *DB) FramesOfItem(ctx context.Context, tenantID, itemID int64, limit int) ([]ItemFrame, error) {
	var out []ItemFrame
	err := db.InTenant(ctx, tenantID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, framesOfItemSQL, tenantID, itemID, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ItemFrame])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("frames of item %d: %w", itemID, err)
	}
	return out, nil
}
