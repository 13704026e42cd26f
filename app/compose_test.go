package app

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
)

// No container engine runs where `make test` does, so the self-host files
// are checked here: by `docker compose config` when the client exists, and
// always by reading them, including that the environment compose gives the
// binary passes LoadConfig.

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string                       `yaml:"image"`
	Profiles    []string                     `yaml:"profiles"`
	Build       string                       `yaml:"build"`
	Command     []string                     `yaml:"command"`
	Restart     string                       `yaml:"restart"`
	Environment map[string]string            `yaml:"environment"`
	Volumes     []string                     `yaml:"volumes"`
	Ports       []string                     `yaml:"ports"`
	DependsOn   map[string]composeDependency `yaml:"depends_on"`
	Healthcheck *composeHealthcheck          `yaml:"healthcheck"`
}

type composeDependency struct {
	Condition string `yaml:"condition"`
}

type composeHealthcheck struct {
	Test        []string `yaml:"test"`
	Interval    string   `yaml:"interval"`
	Timeout     string   `yaml:"timeout"`
	Retries     int      `yaml:"retries"`
	StartPeriod string   `yaml:"start_period"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	// Unknown keys fail: with no compose client to catch a misspelt
	// "depends_on", this is what does.
	dec.KnownFields(true)
	var c composeFile
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

var composeVar = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$`)

// interpolate does compose's ${VAR} and ${VAR:-default} (and $$); any
// other form fails, so the file stays within what this test understands.
func interpolate(s string, getenv func(string) string) (string, error) {
	var bad error
	out := composeVar.ReplaceAllStringFunc(s, func(m string) string {
		sub := composeVar.FindStringSubmatch(m)
		switch {
		case m == "$$":
			return "$"
		case sub[1] == "":
			bad = fmt.Errorf("unsupported interpolation in %q", s)
			return m
		}
		if v := getenv(sub[1]); v != "" {
			return v
		}
		return sub[3]
	})
	return out, bad
}

func TestComposeConfigWithClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "compose", "version").Run(); err != nil {
		t.Log("no docker compose client here; TestComposeFile reads the file instead")
		return
	}
	cmd := exec.CommandContext(ctx, "docker", "compose", "-f", "../docker-compose.yml", "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
}

func TestComposeFile(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	pg, ok := c.Services["postgres"]
	if !ok {
		t.Fatal("no postgres service")
	}
	pp, ok := c.Services["perpetuity"]
	if !ok {
		t.Fatal("no perpetuity service")
	}

	if !strings.HasPrefix(pg.Image, "postgres:16") {
		t.Errorf("postgres image %q, want postgres:16", pg.Image)
	}
	dataVolume := ""
	for _, v := range pg.Volumes {
		if name, path, ok := strings.Cut(v, ":"); ok && path == "/var/lib/postgresql/data" {
			dataVolume = name
		}
	}
	if _, declared := c.Volumes[dataVolume]; dataVolume == "" || !declared {
		t.Errorf("postgres data is not on a declared named volume: volumes %v, top-level %v", pg.Volumes, c.Volumes)
	}
	if hc := pg.Healthcheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "pg_isready") || hc.Retries < 1 {
		t.Errorf("postgres healthcheck %+v, want pg_isready with retries", hc)
	}
	if pw := pg.Environment["POSTGRES_PASSWORD"]; !strings.HasPrefix(pw, "${POSTGRES_PASSWORD:-") {
		t.Errorf("POSTGRES_PASSWORD is %q, want it from the environment with a local default", pw)
	}

	if pp.Build != "." {
		t.Errorf("perpetuity build %q, want .", pp.Build)
	}
	if d, ok := pp.DependsOn["postgres"]; !ok || d.Condition != "service_healthy" {
		t.Errorf("perpetuity depends_on %+v, want postgres service_healthy", pp.DependsOn)
	}
	if !slices.Equal(pp.Command, []string{"serve"}) {
		t.Errorf("perpetuity command %v, want [serve] (serve applies migrations)", pp.Command)
	}
	if pp.Restart != "unless-stopped" {
		t.Errorf("perpetuity restart %q", pp.Restart)
	}
	if !slices.Contains(pp.Ports, "8080:8080") {
		t.Errorf("perpetuity ports %v, want 8080:8080", pp.Ports)
	}
	known := map[string]bool{}
	for _, v := range envVars {
		known[v.name] = true
	}
	for _, name := range []string{"DATABASE_URL", "PERPETUITY_ADDR", "PERPETUITY_PUBLIC_URL", "PERPETUITY_OPENAI_BASE_URL", "PERPETUITY_ANTHROPIC_BASE_URL"} {
		if pp.Environment[name] == "" {
			t.Errorf("perpetuity environment lacks %s", name)
		}
	}
	for name := range pp.Environment {
		if !known[name] {
			t.Errorf("perpetuity environment sets %s, which the binary does not read", name)
		}
	}

	// With the defaults and with everything overridden, the binary accepts
	// its environment and reaches the postgres service with its credentials.
	for _, host := range []map[string]string{
		{},
		{"POSTGRES_PASSWORD": "s3cret-Pass", "PERPETUITY_PUBLIC_URL": "https://memory.example.com", "PERPETUITY_LOG_LEVEL": "debug"},
	} {
		getenv := func(k string) string { return host[k] }
		resolve := func(env map[string]string) map[string]string {
			out := map[string]string{}
			for k, v := range env {
				s, err := interpolate(v, getenv)
				if err != nil {
					t.Fatal(err)
				}
				out[k] = s
			}
			return out
		}
		penv, genv := resolve(pp.Environment), resolve(pg.Environment)
		cfg, err := LoadConfig(func(k string) string { return penv[k] })
		if err != nil {
			t.Errorf("host env %v: the binary rejects compose's environment: %v", host, err)
			continue
		}
		u, err := url.Parse(cfg.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := u.User.Password()
		if u.Hostname() != "postgres" || u.User.Username() != genv["POSTGRES_USER"] || pw != genv["POSTGRES_PASSWORD"] ||
			strings.TrimPrefix(u.Path, "/") != genv["POSTGRES_DB"] {
			t.Errorf("host env %v: DATABASE_URL %q does not match the postgres service %v", host, cfg.DatabaseURL, genv)
		}
		if want := host["POSTGRES_PASSWORD"]; want != "" && pw != want {
			t.Errorf("POSTGRES_PASSWORD=%s did not reach DATABASE_URL", want)
		}
		if want := host["PERPETUITY_PUBLIC_URL"]; want != "" && cfg.PublicURL != want {
			t.Errorf("PERPETUITY_PUBLIC_URL=%s did not reach the service (%s)", want, cfg.PublicURL)
		}
		if _, port, _ := net.SplitHostPort(cfg.Addr); !slices.Contains(pp.Ports, "8080:"+port) {
			t.Errorf("the service listens on %s but the published port is %v", cfg.Addr, pp.Ports)
		}
	}
}

// TestComposeCitusProfile: the citus profile is a Citus coordinator and one
// worker, nodes registered before the service starts, the service on the
// coordinator with an environment the binary accepts, and the distribution
// script mounted where the README's command runs it. No service of the
// plain `docker compose up` belongs to it.
func TestComposeCitusProfile(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	for name, svc := range c.Services {
		citus := slices.Contains(svc.Profiles, "citus")
		if strings.HasPrefix(name, "citus-") || name == "perpetuity-citus" {
			if !citus {
				t.Errorf("%s is not in the citus profile", name)
			}
		} else if citus {
			t.Errorf("%s, outside the Citus set, is in the citus profile", name)
		}
	}
	for _, name := range []string{"citus-coordinator", "citus-worker", "citus-nodes"} {
		if img := c.Services[name].Image; !strings.HasPrefix(img, "citusdata/citus:") {
			t.Errorf("%s image %q, want citusdata/citus", name, img)
		}
	}
	if !slices.Contains(c.Services["citus-coordinator"].Volumes, "./deploy:/deploy:ro") {
		t.Errorf("the coordinator does not mount deploy/ (distribute.sql): %v", c.Services["citus-coordinator"].Volumes)
	}
	for _, name := range []string{"citus-coordinator", "citus-worker"} {
		if d, ok := c.Services["citus-nodes"].DependsOn[name]; !ok || d.Condition != "service_healthy" {
			t.Errorf("citus-nodes depends_on %+v, want %s healthy", c.Services["citus-nodes"].DependsOn, name)
		}
	}
	nodes := strings.Join(c.Services["citus-nodes"].Command, " ")
	if !strings.Contains(nodes, "citus_set_coordinator_host('citus-coordinator'") || !strings.Contains(nodes, "citus_add_node('citus-worker'") {
		t.Errorf("citus-nodes command %q registers neither the coordinator nor the worker", nodes)
	}
	pc := c.Services["perpetuity-citus"]
	if d, ok := pc.DependsOn["citus-nodes"]; !ok || d.Condition != "service_completed_successfully" {
		t.Errorf("perpetuity-citus depends_on %+v, want citus-nodes completed", pc.DependsOn)
	}
	env := map[string]string{}
	for k, v := range pc.Environment {
		s, err := interpolate(v, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		env[k] = s
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the binary rejects perpetuity-citus's environment: %v", err)
	}
	if u, err := url.Parse(cfg.DatabaseURL); err != nil || u.Hostname() != "citus-coordinator" {
		t.Errorf("perpetuity-citus DATABASE_URL %q, want the coordinator", cfg.DatabaseURL)
	}
}

func TestInterpolate(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SET": "v"}
	cases := []struct {
		in, want string
		bad      bool
	}{
		{"${SET:-d}", "v", false},
		{"${UNSET:-d}", "d", false},
		{"x${SET}y", "xvy", false},
		{"a$$b", "a$b", false},
		{"${SET?required}", "", true},
		{"$SET", "", true},
	}
	for _, tc := range cases {
		got, err := interpolate(tc.in, func(k string) string { return env[k] })
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("interpolate(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ op, args string }

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(op), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := readDockerfile(t)
	var froms []int
	for i, in := range ins {
		if in.op == "FROM" {
			froms = append(froms, i)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d FROM lines", len(froms))
	}
	if first := ins[froms[0]].args; !strings.HasPrefix(first, "golang:1.26") || !strings.Contains(strings.ToLower(first), " as ") {
		t.Errorf("builder stage %q, want a named golang:1.26 stage", first)
	}
	final := ins[froms[len(froms)-1]].args
	if final != "scratch" && !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final stage %q, want distroless static or scratch", final)
	}

	var build string
	for _, in := range ins[:froms[len(froms)-1]] {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags="-s -w"`, "./cmd/perpetuity"} {
		if !strings.Contains(build, want) {
			t.Errorf("build step %q lacks %s", build, want)
		}
	}

	var user, entry, cmd string
	exposed, copied := false, false
	for _, in := range ins[froms[len(froms)-1]+1:] {
		switch in.op {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "CMD":
			cmd = in.args
		case "EXPOSE":
			exposed = exposed || slices.Contains(strings.Fields(in.args), "8080")
		case "COPY":
			copied = copied || strings.Contains(in.args, "--from=")
		}
	}
	if name, _, _ := strings.Cut(user, ":"); user == "" || name == "root" || name == "0" {
		t.Errorf("final stage USER %q, want a non-root user", user)
	}
	if !exposed || !copied {
		t.Errorf("final stage: EXPOSE 8080 %v, binary copied from the builder %v", exposed, copied)
	}
	if !strings.Contains(entry+" "+cmd, "perpetuity") || !strings.Contains(cmd, "serve") {
		t.Errorf("the image runs %s %s, want perpetuity serve", entry, cmd)
	}

	secret := regexp.MustCompile(`(?i)(password|secret|token|api_?key|database_url)`)
	for _, in := range ins {
		if (in.op == "ENV" || in.op == "ARG") && secret.MatchString(in.args) {
			t.Errorf("%s %s: no credentials in the image", in.op, in.args)
		}
		if (in.op == "COPY" || in.op == "ADD") && strings.Contains(in.args, ".env") {
			t.Errorf("%s %s: no .env in the image", in.op, in.args)
		}
	}

	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ignore), "\n")
	for _, want := range []string{".git", ".data", ".env"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}
