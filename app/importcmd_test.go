package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestImportCommand lives here because this helper may only add eval_test.go
// to app; it belongs in importcmd_test.go.
func TestImportCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.New(t)
	vars := map[string]string{"DATABASE_URL": dbURL}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var stdout, stderr bytes.Buffer
	if err := run(ctx, testEnv(vars, &stdout, &stderr), []string{"tenant", "create", "--json", "acme"}); err != nil {
		t.Fatal(err)
	}
	var nt struct {
		TenantID int64 `json:"tenant_id"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &nt); err != nil {
		t.Fatal(err)
	}
	tenant := strconv.FormatInt(nt.TenantID, 10)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	lines := `{"conversation": "c1", "user": "caroline", "turns": [{"role": "user", "speaker": "Caroline", "text": "I paint sunsets.", "at": "2023-05-08T13:56:00Z"}, {"role": "assistant", "text": "Lovely.", "at": "2023-05-08T13:57:00Z"}]}
{"conversation": "c2", "turns": [{"role": "user", "text": "Bob here.", "at": "2023-05-09T10:00:00Z"}]}
`
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(good, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(lines, `"Bob here."`, `"Bob here.", "mood": 1`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cases := []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
		stored  int
	}{
		{"no tenant", []string{good}, "usage", "", 0},
		{"bad format", []string{"--tenant", tenant, "--format", "csv", good}, "not supported", "", 0},
		{"not chatgpt", []string{"--tenant", tenant, "--format", "chatgpt", good}, "not ChatGPT", "", 0},
		{"no user for line 2", []string{"--tenant", tenant, good}, "line 2: user: required", "", 0},
		{"bad line imports nothing", []string{"--tenant", tenant, "--user", "bob", bad}, `line 2: unknown field "mood" (nothing was imported)`, "", 0},
		{"good", []string{"--tenant", tenant, "--user", "bob", good}, "", "imported 2 conversations into tenant " + tenant + ": 3 turns stored, 0 already present", 3},
		{"again", []string{"--tenant", tenant, "--user", "bob", good}, "", "3 already present", 3},
	}
	for _, tc := range cases { // in order: each case sees what the earlier ones stored
		stdout.Reset()
		err := runImport(ctx, testEnv(vars, &stdout, &stderr), tc.args)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
		if !strings.Contains(stdout.String(), tc.wantOut) {
			t.Errorf("%s: stdout %q, want %q", tc.name, stdout.String(), tc.wantOut)
		}
		if n := count(); n != tc.stored {
			t.Errorf("%s: %d messages stored, want %d", tc.name, n, tc.stored)
		}
	}
}
