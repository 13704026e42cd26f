package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/perpetuity/perpetuity/migrations/dbtest"
)

// TestTenantLimitsCommand walks `perpetuity tenant limits` through show,
// partial changes, defaults, reset and the mistakes it must refuse.
func TestTenantLimitsCommand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": dbtest.New(t), "PERPETUITY_KEY_RPM": "60", "PERPETUITY_KEY_TPM": "90000"}
	run := func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), testEnv(vars, &stdout, &stderr), args)
		return stdout.String() + stderr.String(), err
	}
	out, err := run("tenant", "create", "--json", "acme")
	if err != nil {
		t.Fatalf("tenant create: %v\n%s", err, out)
	}
	var nt struct {
		TenantID int64 `json:"tenant_id"`
	}
	if err := json.Unmarshal([]byte(out), &nt); err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(nt.TenantID, 10)

	type limits struct {
		RPM    int    `json:"requests_per_minute"`
		TPM    int    `json:"tokens_per_minute"`
		TPD    int64  `json:"tokens_per_day"`
		Source string `json:"source"`
	}
	steps := []struct {
		name string
		args []string
		want limits
	}{
		{"a new tenant shows the defaults", []string{id}, limits{60, 90000, 0, "defaults"}},
		{"the first change keeps the other defaults", []string{id, "--tpd", "1000000"}, limits{60, 90000, 1000000, "tenant"}},
		{"flags before the id work too", []string{"--rpm", "3", id}, limits{3, 90000, 1000000, "tenant"}},
		{"0 lifts a limit", []string{id, "--tpm", "0"}, limits{3, 0, 1000000, "tenant"}},
		{"show", []string{id}, limits{3, 0, 1000000, "tenant"}},
		{"reset goes back to the defaults", []string{id, "--reset"}, limits{60, 90000, 0, "defaults"}},
	}
	for _, s := range steps {
		out, err := run(append([]string{"tenant", "limits", "--json"}, s.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.name, err, out)
		}
		var got limits
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: output %q: %v", s.name, out, err)
		}
		if got != s.want {
			t.Fatalf("%s: %+v, want %+v", s.name, got, s.want)
		}
	}
	out, err = run("tenant", "limits", id, "--rpm", "5")
	if err != nil || !strings.Contains(out, "requests per minute  5") || !strings.Contains(out, "tokens per day       unlimited") ||
		!strings.Contains(out, "N times") {
		t.Fatalf("text form: %v\n%s", err, out)
	}

	for _, bad := range []struct {
		args  []string
		usage bool
		say   string
	}{
		{[]string{}, true, "usage"},
		{[]string{"x"}, true, "not a tenant id"},
		{[]string{id, "--rpm", "-1"}, true, "--rpm"},
		{[]string{id, "--tpm", "3000000000"}, true, "--tpm"},
		{[]string{id, "--tpd", "-5"}, true, "--tpd"},
		{[]string{id, "--reset", "--rpm", "1"}, true, "--reset"},
		{[]string{"999999", "--rpm", "1"}, false, "no tenant 999999"},
		{[]string{"999999"}, false, "no tenant 999999"},
	} {
		out, err := run(append([]string{"tenant", "limits"}, bad.args...)...)
		if err == nil {
			t.Fatalf("tenant limits %v succeeded:\n%s", bad.args, out)
		}
		if (ExitCode(err) == 2) != bad.usage || !strings.Contains(err.Error()+out, bad.say) {
			t.Fatalf("tenant limits %v: exit %d, %v, want usage=%v mentioning %q", bad.args, ExitCode(err), err, bad.usage, bad.say)
		}
	}
}
