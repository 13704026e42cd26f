package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// An item's text, role, times, conversation, owner and token count are
// fixed at capture and never change; only a purge removes them. Only its
// speaker label changes after capture (a rename binds a new value), so a
// serving process may keep what frames render of items and read from here
// only the labels and the items it does not hold (memory/itemcache.go).

// ItemText is what a frame renders of an item besides its label.
type ItemText struct {
	ID          int64
	MessageID   int64
	UserID      int64
	ConvID      int64
	Role        string
	Speaker     string // as stored: the subject of its label (LabelOf)
	Part        int
	Body        string
	TokenCount  int
	BornAt      time.Time
	Interrupted bool
}

// LabelKey is the binding an item's speaker label resolves through: the
// latest binding of kind and subject in the owner's memory.
type LabelKey struct {
	UserID  int64
	Kind    string
	Subject string
}

// assistantLabel is the label of an assistant turn with no stored speaker,
// which no binding names.
const assistantLabel = "assistant"

// LabelOf is the binding an item's label resolves through, or, when ok is
// false, the label itself: the rule renderSQL's speaker column applies.
func LabelOf(it ItemText) (key LabelKey, fixed string, ok bool) {
	if it.Speaker == "" && it.Role != "user" {
		return LabelKey{}, assistantLabel, false
	}
	kind := BindUser
	if it.Speaker != "" {
		kind = BindSpeaker
	}
	return LabelKey{UserID: it.UserID, Kind: kind, Subject: it.Speaker}, "", true
}

// Render is the item with its label resolved, as RenderItems reads it
// (without the conversation title, which frames do not show).
func (it ItemText) Render(label string) RenderItem {
	return RenderItem{ID: it.ID, MessageID: it.MessageID, UserID: it.UserID, ConvID: it.ConvID, Role: it.Role,
		Speaker: label, Part: it.Part, Body: it.Body, TokenCount: it.TokenCount, BornAt: it.BornAt, Interrupted: it.Interrupted}
}

// Labels are resolved speaker labels. Every label of the user Of's own
// memory is in By when Of is not 0, an unbound one as missing (it renders
// empty, as renderSQL's); otherwise only those By holds are known.
type Labels struct {
	Of int64
	By map[LabelKey]string
}

// Resolve is the label of key, and whether it is known.
func (l Labels) Resolve(key LabelKey) (string, bool) {
	if v, ok := l.By[key]; ok {
		return v, true
	}
	return "", l.Of != 0 && key.UserID == l.Of
}

// viewerLabelLimit bounds how many speakers of the viewer's memory a frame
// reads up front; a memory with more resolves the rest with the items.
const viewerLabelLimit = 256

const (
	// The viewer's current labels: its name and the latest label of each
	// speaker its memory stores, each the head of its run in the index.
	viewerLabelsSQL = `(SELECT DISTINCT ON (subject) kind, subject, value FROM bindings
			WHERE tenant_id = $1 AND user_id = $2 AND kind = 'speaker' ORDER BY subject, id DESC LIMIT $3)
		UNION ALL
		(SELECT kind, subject, value FROM bindings
			WHERE tenant_id = $1 AND user_id = $2 AND kind = 'user' AND subject = '' ORDER BY id DESC LIMIT 1)`
	// The label column is resolved only where the viewer's labels read up
	// front cannot tell it ($3: the viewer they cover, 0 for none); NULL
	// otherwise, or for a fixed label.
	itemTextSQL = `SELECT i.id, i.message_id, i.user_id, i.conversation_id, i.role, i.speaker, i.part, i.body,
			i.token_count, i.born_at, i.interrupted,
			CASE WHEN (i.speaker = '' AND i.role <> 'user') OR i.user_id = $3 THEN NULL
			ELSE COALESCE((SELECT b.value FROM bindings b
				WHERE b.tenant_id = i.tenant_id AND b.user_id = i.user_id
					AND b.kind = CASE WHEN i.speaker <> '' THEN 'speaker' ELSE 'user' END AND b.subject = i.speaker
				ORDER BY b.id DESC LIMIT 1), '') END
		FROM items i
		WHERE i.tenant_id = $1 AND i.id = ANY($2)`
	itemSpeakersSQL = `SELECT id, user_id, role, speaker FROM items WHERE tenant_id = $1 AND id = ANY($2)`
	labelsSQL       = `SELECT k.user_id, k.kind, k.subject, COALESCE((SELECT b.value FROM bindings b
			WHERE b.tenant_id = $1 AND b.user_id = k.user_id AND b.kind = k.kind AND b.subject = k.subject
			ORDER BY b.id DESC LIMIT 1), '')
		FROM unnest($2::bigint[], $3::text[], $4::text[]) AS k(user_id, kind, subject)`
)

// queueViewerLabels adds the viewer's labels to a frame's read.
func queueViewerLabels(b *pgx.Batch, tenantID, viewerID int64, into *Labels) {
	*into = Labels{Of: viewerID, By: map[LabelKey]string{}}
	b.Queue(viewerLabelsSQL, tenantID, viewerID, viewerLabelLimit).Query(func(rows pgx.Rows) error {
		var kind, subject, value string
		n := 0
		_, err := pgx.ForEachRow(rows, []any{&kind, &subject, &value}, func() error {
			into.By[LabelKey{UserID: viewerID, Kind: kind, Subject: subject}] = value
			if kind == BindSpeaker {
				n++
			}
			return nil
		})
		if n >= viewerLabelLimit {
			into.Of = 0 // cut short: an absent speaker may be bound after all
		}
		return err
	})
}

// ItemSpeakers reads whose turn each of ids is (of an item that still
// exists): its owner, role and stored speaker, the fields LabelOf reads, and
// nothing else of it. A frame that ranks by speaker (memory/speaker.go)
// reads these for candidates it may never render.
func (db *DB) ItemSpeakers(ctx context.Context, tenantID int64, ids []int64) ([]ItemText, error) {
	var out []ItemText
	err := db.hotPipeline(ctx, tenantID, func(b *pgx.Batch) {
		b.Queue(itemSpeakersSQL, tenantID, ids).Query(func(rows pgx.Rows) (err error) {
			out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ItemText, error) {
				var it ItemText
				err := row.Scan(&it.ID, &it.UserID, &it.Role, &it.Speaker)
				return it, err
			})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("item speakers: %w", err)
	}
	return out, nil
}

// ItemTexts is what ReadItemTexts found.
type ItemTexts struct {
	Items  []ItemText // the ids that still exist, in no order
	Labels map[LabelKey]string
}

// ReadItemTexts reads, in one round trip, the items of ids that exist and
// the labels of keys, and of those items' own labels all that known (the
// labels a frame read up front) does not already tell.
func (db *DB) ReadItemTexts(ctx context.Context, tenantID int64, ids []int64, keys []LabelKey, known Labels) (ItemTexts, error) {
	out := ItemTexts{Labels: map[LabelKey]string{}}
	err := db.hotPipeline(ctx, tenantID, func(b *pgx.Batch) {
		if len(ids) > 0 {
			b.Queue(itemTextSQL, tenantID, ids, known.Of).Query(func(rows pgx.Rows) error {
				var it ItemText
				var label *string
				_, err := pgx.ForEachRow(rows, []any{&it.ID, &it.MessageID, &it.UserID, &it.ConvID, &it.Role, &it.Speaker,
					&it.Part, &it.Body, &it.TokenCount, &it.BornAt, &it.Interrupted, &label}, func() error {
					out.Items = append(out.Items, it)
					if key, _, ok := LabelOf(it); ok && label != nil {
						out.Labels[key] = *label
					}
					return nil
				})
				return err
			})
		}
		if len(keys) > 0 {
			users, kinds, subjects := make([]int64, len(keys)), make([]string, len(keys)), make([]string, len(keys))
			for i, k := range keys {
				users[i], kinds[i], subjects[i] = k.UserID, k.Kind, k.Subject
			}
			b.Queue(labelsSQL, tenantID, users, kinds, subjects).Query(func(rows pgx.Rows) error {
				var k LabelKey
				var value string
				_, err := pgx.ForEachRow(rows, []any{&k.UserID, &k.Kind, &k.Subject, &value}, func() error {
					out.Labels[k] = value
					return nil
				})
				return err
			})
		}
	})
	if err != nil {
		return ItemTexts{}, fmt.Errorf("item texts: %w", err)
	}
	return out, nil
}
