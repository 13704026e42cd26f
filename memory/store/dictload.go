package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/perpetuity/perpetuity/memory/dict"
)

// Loading dictionary versions (shared data, not tenant data) and reading
// them back, for rollouts.

// DictInfo is a loaded dictionary version.
type DictInfo struct {
	Version  int
	Name     string
	Entries  int
	LoadedAt time.Time
}

const (
	listDictsSQL    = `SELECT version, name, entries, loaded_at FROM dictionaries ORDER BY version`
	dictNameSQL     = `SELECT name FROM dictionaries WHERE version = $1`
	dictEntriesSQL  = `SELECT word, term_id FROM dictionary_entries WHERE version = $1 ORDER BY word COLLATE "C"`
	uploadAuditSQL  = `SELECT record_platform_audit($1, $2, $3, $4, $5, $6)`
	listTenantsSQL  = `SELECT id, name FROM list_tenants()`
	auditDictUpload = "dict.upload"
)

// Dictionaries lists the loaded versions.
func (db *DB) Dictionaries(ctx context.Context) ([]DictInfo, error) {
	rows, err := db.Pool.Query(ctx, listDictsSQL)
	if err != nil {
		return nil, fmt.Errorf("list dictionaries: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DictInfo])
	if err != nil {
		return nil, fmt.Errorf("list dictionaries: %w", err)
	}
	return out, nil
}

type dictEntry struct {
	Word string
	ID   int32
}

// dictQuerier is the pool or a transaction already holding a connection.
type dictQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (db *DB) dictEntries(ctx context.Context, version int) (string, []dictEntry, error) {
	return dictEntries(ctx, db.Pool, version)
}

func dictEntries(ctx context.Context, q dictQuerier, version int) (string, []dictEntry, error) {
	var name string
	if err := q.QueryRow(ctx, dictNameSQL, version).Scan(&name); err != nil {
		return "", nil, fmt.Errorf("dictionary v%d: %w", version, notFound(err))
	}
	rows, err := q.Query(ctx, dictEntriesSQL, version)
	if err != nil {
		return "", nil, fmt.Errorf("dictionary v%d: %w", version, err)
	}
	es, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dictEntry])
	if err != nil {
		return "", nil, fmt.Errorf("dictionary v%d: %w", version, err)
	}
	return name, es, nil
}

// UploadDictionary loads d dark: it is stored for every tenant to derive,
// and serves none until a tenant flips to it. Loading the same entries
// again is a no-op (loaded false); other entries under a loaded version are
// ErrDictionaryConflict. The audit entry is platform-level.
func (db *DB) UploadDictionary(ctx context.Context, d *dict.Dictionary, by Actor) (loaded bool, err error) {
	same, err := db.sameDictionary(ctx, d)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	if err == nil {
		if !same {
			return false, fmt.Errorf("dictionary v%d: %w", d.Version, ErrDictionaryConflict)
		}
		return false, nil
	}
	loaded, err = db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries())
	if err != nil {
		return false, err
	}
	if !loaded { // another process loaded this version meanwhile
		if same, err := db.sameDictionary(ctx, d); err != nil || !same {
			return false, errors.Join(fmt.Errorf("dictionary v%d: %w", d.Version, ErrDictionaryConflict), err)
		}
		return false, nil
	}
	detail, _ := json.Marshal(map[string]any{"version": d.Version, "name": d.Name, "entries": d.Len()})
	if _, err := db.Pool.Exec(ctx, uploadAuditSQL, by.AccountID, by.Email, auditDictUpload,
		fmt.Sprintf("dictionary:%d", d.Version), detail, by.Address); err != nil {
		return true, fmt.Errorf("dictionary upload audit: %w", err)
	}
	return true, nil
}

// sameDictionary compares d with the loaded entries of its version;
// ErrNotFound when the version is not loaded.
func (db *DB) sameDictionary(ctx context.Context, d *dict.Dictionary) (bool, error) {
	name, have, err := db.dictEntries(ctx, d.Version)
	if err != nil {
		return false, err
	}
	if name != d.Name || len(have) != d.Len() {
		return false, nil
	}
	i := 0
	for w, id := range d.Entries() { // ascending bytes, as COLLATE "C"
		if have[i].Word != w || uint32(have[i].ID) != id {
			return false, nil
		}
		i++
	}
	return true, nil
}

// LoadDictionary rebuilds a loaded version from its entries, so a process
// can derive and query any version the database holds, shipped with its
// binary or uploaded. The entries determine the mapping completely: each
// term id's first word becomes the term, its other words forms of it.
func (db *DB) LoadDictionary(ctx context.Context, version int) (*dict.Dictionary, error) {
	return loadDictionary(ctx, db.Pool, version)
}

func loadDictionary(ctx context.Context, q dictQuerier, version int) (*dict.Dictionary, error) {
	name, es, err := dictEntries(ctx, q, version)
	if err != nil {
		return nil, err
	}
	var stop []string
	byID := map[int32][]string{}
	for _, e := range es {
		if e.ID == int32(dict.NoTerm) {
			stop = append(stop, e.Word)
			continue
		}
		byID[e.ID] = append(byID[e.ID], e.Word)
	}
	ids := make([]int32, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%d\t%s\n[stopwords]\n", dict.Magic, version, name)
	for _, w := range stop {
		b.WriteString(w + "\n")
	}
	b.WriteString("[terms]\n")
	for _, id := range ids {
		b.WriteString(byID[id][0] + "\n")
	}
	b.WriteString("[forms]\n")
	for _, id := range ids {
		for _, w := range byID[id][1:] {
			b.WriteString(w + "\t" + byID[id][0] + "\n")
		}
	}
	d, err := dict.Parse(strings.NewReader(b.String()))
	if err != nil {
		return nil, fmt.Errorf("dictionary v%d from the database: %w", version, err)
	}
	for _, e := range es {
		if id, _ := d.Lookup(e.Word); id != uint32(e.ID) {
			return nil, fmt.Errorf("dictionary v%d from the database: term ids are not 1..N in order (%q is %d, rebuilt %d)",
				version, e.Word, e.ID, id)
		}
	}
	return d, nil
}

// dictMissingCode is raised by create_tenant (migration 000013) when the
// version a new tenant would start on is not loaded.
const dictMissingCode = "PPDV2"

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// ensureStartDictionary makes sure version is loaded before a tenant
// starts on it. The usual case, loaded already, costs one lookup; a
// shipped version that is missing is parsed and loaded, which is safe when
// several tenants are created at once (EnsureDictionary lets one load win
// and the others find it). A version neither loaded nor shipped must be
// uploaded first.
func (db *DB) ensureStartDictionary(ctx context.Context, version int) error {
	var ok bool
	if err := db.Pool.QueryRow(ctx, dictExistsVSQL, version).Scan(&ok); err != nil {
		return fmt.Errorf("dictionary v%d: %w", version, err)
	}
	if ok {
		return nil
	}
	if !slices.Contains(dict.BuiltinVersions(), version) {
		return fmt.Errorf("dictionary v%d is not loaded (dict upload FILE): %w", version, ErrNotFound)
	}
	d, err := dict.Builtin(version)
	if err != nil {
		return err
	}
	_, err = db.EnsureDictionary(ctx, d.Version, d.Name, d.Entries())
	return err
}

// TenantRef names a tenant.
type TenantRef struct {
	ID   int64
	Name string
}

// Tenants lists every tenant, for operations that walk them all. Like key
// resolution it is a platform-level read (a function that runs as the
// owner): the tenant list is not tenant data.
func (db *DB) Tenants(ctx context.Context) ([]TenantRef, error) {
	rows, err := db.Pool.Query(ctx, listTenantsSQL)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TenantRef])
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}
