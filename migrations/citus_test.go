package migrations_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// distributeScript is the shipped Citus script; its three lists are the one
// statement of where each table goes, for operators and for this test.
var distributeScript = filepath.Join("..", "deploy", "citus", "distribute.sql")

// layout is where each table goes on Citus.
type layout struct {
	reference, local, distributed []string
}

func (l layout) placement(table string) string {
	switch {
	case slices.Contains(l.reference, table):
		return "reference"
	case slices.Contains(l.local, table):
		return "local"
	case slices.Contains(l.distributed, table):
		return "distributed"
	}
	return ""
}

var (
	listRE     = regexp.MustCompile(`(?s)SELECT (create_reference_table|citus_add_local_table_to_metadata|create_distributed_table)\(t\b[^;]*?ARRAY\[([^\]]*)\]`)
	firstRE    = regexp.MustCompile(`SELECT create_distributed_table\('(\w+)', 'tenant_id'\);`)
	quotedRE   = regexp.MustCompile(`'(\w+)'`)
	commentsRE = regexp.MustCompile(`--[^\n]*`)
)

// readLayout reads the lists of deploy/citus/distribute.sql.
func readLayout(t *testing.T) layout {
	t.Helper()
	b, err := os.ReadFile(distributeScript)
	if err != nil {
		t.Fatal(err)
	}
	sql := commentsRE.ReplaceAllString(string(b), "")
	var l layout
	for _, m := range listRE.FindAllStringSubmatch(sql, -1) {
		var names []string
		for _, q := range quotedRE.FindAllStringSubmatch(m[2], -1) {
			names = append(names, q[1])
		}
		switch m[1] {
		case "create_reference_table":
			l.reference = append(l.reference, names...)
		case "citus_add_local_table_to_metadata":
			l.local = append(l.local, names...)
		case "create_distributed_table":
			l.distributed = append(l.distributed, names...)
		}
	}
	for _, m := range firstRE.FindAllStringSubmatch(sql, -1) {
		l.distributed = append(l.distributed, m[1])
	}
	if len(l.reference) == 0 || len(l.local) == 0 || len(l.distributed) < 2 {
		t.Fatalf("%s: read %+v, want three lists", distributeScript, l)
	}
	return l
}

// The catalog queries, each over one schema. Keys are primary keys, unique
// constraints and exclusion constraints, and unique indexes that back no
// constraint (a unique expression index, say).
const (
	tablesSQL = `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 1`
	keysSQL = `SELECT c.relname, con.conname,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND a.attnum = ANY (con.conkey))
FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND con.contype IN ('p', 'u', 'x')
UNION ALL
SELECT c.relname, i.relname,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND a.attnum = ANY (x.indkey::int2[]))
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND x.indisunique AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = x.indexrelid AND con.conrelid = c.oid)
ORDER BY 1, 2`
	// paired: the referencing table's tenant_id is matched with the
	// referenced table's tenant_id, position for position.
	foreignKeysSQL = `SELECT c.relname, con.conname, r.relname,
       EXISTS (SELECT 1 FROM generate_subscripts(con.conkey, 1) k
               JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = con.conkey[k]
               JOIN pg_attribute b ON b.attrelid = r.oid AND b.attnum = con.confkey[k]
               WHERE a.attname = 'tenant_id' AND b.attname = 'tenant_id')
FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_class r ON r.oid = con.confrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND con.contype = 'f' ORDER BY 1, 2`
	hasTenantSQL = `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
WHERE n.nspname = $1`
)

// citusViolations is every way the schema breaks what Citus can distribute
// as l places it: a table placed nowhere (or twice); a distributed table
// without tenant_id; a key of a distributed table without tenant_id (a
// shard could not enforce it); a foreign key of a distributed table to a
// coordinator table, or to another distributed table without pairing the
// tenant_ids; a foreign key of a reference or coordinator table to a
// distributed one. ignore are tables outside the layout (golang-migrate's
// own).
func citusViolations(ctx context.Context, conn *pgx.Conn, schema string, l layout, ignore ...string) ([]string, error) {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	rows, err := conn.Query(ctx, tablesSQL, schema)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, tb := range tables {
		n := 0
		for _, list := range [][]string{l.reference, l.local, l.distributed} {
			if slices.Contains(list, tb) {
				n++
			}
		}
		if n != 1 && !slices.Contains(ignore, tb) {
			bad("%s: placed in %d of the lists of %s, want exactly one", tb, n, distributeScript)
		}
	}
	for _, lists := range [][]string{l.reference, l.local, l.distributed} {
		for _, tb := range lists {
			if !slices.Contains(tables, tb) {
				bad("%s: listed but not in the schema", tb)
			}
		}
	}
	rows, err = conn.Query(ctx, hasTenantSQL, schema)
	if err != nil {
		return nil, err
	}
	tenanted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, tb := range l.distributed {
		if slices.Contains(tables, tb) && !slices.Contains(tenanted, tb) {
			bad("%s: distributed by tenant_id but has no tenant_id column", tb)
		}
	}

	rows, err = conn.Query(ctx, keysSQL, schema)
	if err != nil {
		return nil, err
	}
	type key struct {
		Table, Name string
		Tenant      bool
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[key])
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if l.placement(k.Table) == "distributed" && !k.Tenant {
			bad("%s: key %s does not include tenant_id", k.Table, k.Name)
		}
	}

	rows, err = conn.Query(ctx, foreignKeysSQL, schema)
	if err != nil {
		return nil, err
	}
	type fk struct {
		Table, Name, Target string
		Paired              bool
	}
	fks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fk])
	if err != nil {
		return nil, err
	}
	for _, f := range fks {
		from, to := l.placement(f.Table), l.placement(f.Target)
		switch {
		case from == "distributed" && to == "distributed" && !f.Paired:
			bad("%s: foreign key %s to %s does not pair tenant_id with tenant_id", f.Table, f.Name, f.Target)
		case from == "distributed" && to != "distributed" && to != "reference":
			bad("%s: foreign key %s to %s, a %s table: a distributed table may reference only reference tables and its colocated tables",
				f.Table, f.Name, f.Target, placementName(to))
		case from != "distributed" && to == "distributed":
			bad("%s: foreign key %s of a %s table to the distributed %s", f.Table, f.Name, placementName(from), f.Target)
		}
	}
	return out, nil
}

func placementName(p string) string {
	if p == "" {
		return "unplaced"
	}
	return p
}

// TestCitusReadySchema: the migrated schema, placed as
// deploy/citus/distribute.sql places it, has nothing Citus could not
// distribute. A migration that adds a key without tenant_id to a tenant
// table, a cross-tenant unique column, or a table no list names fails here.
func TestCitusReadySchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	got, err := citusViolations(ctx, conn, "public", readLayout(t), "schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		t.Error(v)
	}
}

// TestCitusCheckCatchesBadTables: the check itself, on deliberately bad
// tables in a scratch schema of their own: each case adds one table to a
// good base and must be reported for exactly what it breaks.
func TestCitusCheckCatchesBadTables(t *testing.T) {
	t.Parallel()
	url := dbtest.New(t)
	base := []string{
		`CREATE TABLE tenants (id bigint PRIMARY KEY)`,
		`CREATE TABLE accounts (id bigint PRIMARY KEY, tenant_id bigint REFERENCES tenants (id))`,
		`CREATE TABLE users (tenant_id bigint NOT NULL REFERENCES tenants (id), id bigint NOT NULL, name text,
			PRIMARY KEY (tenant_id, id), UNIQUE (tenant_id, name))`,
	}
	lay := layout{reference: []string{"tenants"}, local: []string{"accounts"}, distributed: []string{"users"}}
	for _, c := range []struct {
		name, table string
		place       string // which list the table goes in ("" none)
		want        []string
	}{
		{"good", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint NOT NULL, user_id bigint NOT NULL,
			PRIMARY KEY (tenant_id, id), FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id))`, "distributed", nil},
		{"unique across tenants", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint NOT NULL, code text UNIQUE,
			PRIMARY KEY (tenant_id, id))`, "distributed", []string{"notes: key notes_code_key does not include tenant_id"}},
		{"primary key without tenant", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint PRIMARY KEY)`, "distributed",
			[]string{"notes: key notes_pkey does not include tenant_id"}},
		{"unique expression index", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint NOT NULL, code text,
			PRIMARY KEY (tenant_id, id)); CREATE UNIQUE INDEX notes_code ON notes (lower(code))`, "distributed",
			[]string{"notes: key notes_code does not include tenant_id"}},
		{"foreign key to a coordinator table", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint NOT NULL,
			account_id bigint REFERENCES accounts (id), PRIMARY KEY (tenant_id, id))`, "distributed",
			[]string{"notes: foreign key notes_account_id_fkey to accounts, a local table: a distributed table may reference only reference tables and its colocated tables"}},
		{"foreign key across tenants", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint NOT NULL, other_tenant bigint,
			user_id bigint, PRIMARY KEY (tenant_id, id), FOREIGN KEY (other_tenant, user_id) REFERENCES users (tenant_id, id))`, "distributed",
			[]string{"notes: foreign key notes_other_tenant_user_id_fkey to users does not pair tenant_id with tenant_id"}},
		{"coordinator table referencing a tenant table", `CREATE TABLE notes (id bigint PRIMARY KEY, tenant_id bigint, user_id bigint,
			FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id))`, "local",
			[]string{"notes: foreign key notes_tenant_id_user_id_fkey of a local table to the distributed users"}},
		{"distributed without tenant_id", `CREATE TABLE notes (id bigint PRIMARY KEY)`, "distributed",
			[]string{"notes: distributed by tenant_id but has no tenant_id column", "notes: key notes_pkey does not include tenant_id"}},
		{"placed nowhere", `CREATE TABLE notes (tenant_id bigint NOT NULL, id bigint NOT NULL, PRIMARY KEY (tenant_id, id))`, "",
			[]string{"notes: placed in 0 of the lists of " + distributeScript + ", want exactly one"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			schema := "citus_" + strings.ReplaceAll(c.name, " ", "_")
			stmts := append([]string{"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize(), "SET search_path = " + pgx.Identifier{schema}.Sanitize()},
				append(base, c.table)...)
			for _, s := range stmts {
				if _, err := conn.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			l := lay
			switch c.place {
			case "distributed":
				l.distributed = append(slices.Clone(l.distributed), "notes")
			case "local":
				l.local = append(slices.Clone(l.local), "notes")
			}
			got, err := citusViolations(ctx, conn, schema, l)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("violations\n  %q\nwant\n  %q", got, c.want)
			}
		})
	}
}
