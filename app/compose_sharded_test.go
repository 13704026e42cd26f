package app

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestComposeShardedProfile: the sharded profile is three replicas owning
// shares 1/3..3/3 under an arena budget, on the plain postgres service,
// behind nginx running the committed deploy/nginx/perpetuity.conf; the
// config's servers are exactly those replicas at the port they listen on,
// and it keeps the settings the balancer needs (consistent hashing of the
// key, passive health, no buffering, long reads). e2e/reliability/sharded
// runs the same file with Debian's nginx.
func TestComposeShardedProfile(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	shards := []string{"perpetuity-shard-1", "perpetuity-shard-2", "perpetuity-shard-3"}
	members := append(slices.Clone(shards), "perpetuity-balancer")
	for name, svc := range c.Services {
		in := slices.Contains(svc.Profiles, "sharded")
		if want := slices.Contains(members, name); in != want {
			t.Errorf("%s: in the sharded profile %v, want %v", name, in, want)
		}
	}
	known := map[string]bool{}
	for _, v := range envVars {
		known[v.name] = true
	}
	for i, name := range shards {
		svc, ok := c.Services[name]
		if !ok {
			t.Fatalf("no %s service", name)
		}
		if !slices.Equal(svc.Command, []string{"serve"}) || svc.Image != "perpetuity:local" {
			t.Errorf("%s runs %v of %q, want serve of perpetuity:local", name, svc.Command, svc.Image)
		}
		if d, ok := svc.DependsOn["postgres"]; !ok || d.Condition != "service_healthy" {
			t.Errorf("%s depends_on %+v, want postgres healthy", name, svc.DependsOn)
		}
		env := map[string]string{}
		for k, v := range svc.Environment {
			if !known[k] {
				t.Errorf("%s sets %s, which the binary does not read", name, k)
			}
			s, err := interpolate(v, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			env[k] = s
		}
		cfg, err := LoadConfig(func(k string) string { return env[k] })
		if err != nil {
			t.Errorf("the binary rejects %s's environment: %v", name, err)
			continue
		}
		if cfg.Shard.Index != i+1 || cfg.Shard.Count != len(shards) {
			t.Errorf("%s owns share %d/%d, want %d/%d", name, cfg.Shard.Index, cfg.Shard.Count, i+1, len(shards))
		}
		if cfg.ArenaBudget <= 0 {
			t.Errorf("%s has no arena budget", name)
		}
		if len(cfg.TrustedProxies) == 0 {
			t.Errorf("%s trusts no proxy: behind nginx every client would count as the balancer", name)
		}
		if u, err := url.Parse(cfg.DatabaseURL); err != nil || u.Hostname() != "postgres" {
			t.Errorf("%s DATABASE_URL %q, want the postgres service", name, cfg.DatabaseURL)
		}
		if _, port, _ := net.SplitHostPort(cfg.Addr); port != "8080" {
			t.Errorf("%s listens on %q, want :8080 (the port the balancer config names)", name, cfg.Addr)
		}
		if len(svc.Ports) != 0 {
			t.Errorf("%s publishes %v: clients must come through the balancer", name, svc.Ports)
		}
	}

	lb := c.Services["perpetuity-balancer"]
	if !strings.HasPrefix(lb.Image, "nginx:") {
		t.Errorf("perpetuity-balancer image %q, want nginx", lb.Image)
	}
	if !slices.Contains(lb.Volumes, "./deploy/nginx/perpetuity.conf:/etc/nginx/conf.d/default.conf:ro") {
		t.Errorf("perpetuity-balancer does not mount deploy/nginx/perpetuity.conf as its default server: %v", lb.Volumes)
	}
	for _, name := range shards {
		if _, ok := lb.DependsOn[name]; !ok {
			t.Errorf("perpetuity-balancer does not depend on %s", name)
		}
	}
	b, err := os.ReadFile("../deploy/nginx/perpetuity.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	servers := regexp.MustCompile(`(?m)^\s*server\s+([a-z0-9-]+):(\d+)\s`).FindAllStringSubmatch(conf, -1)
	var named []string
	for _, s := range servers {
		named = append(named, s[1])
		if s[2] != "8080" {
			t.Errorf("the config sends %s to port %s, where it does not listen", s[1], s[2])
		}
	}
	if !slices.Equal(named, shards) {
		t.Errorf("the config's servers are %v, want %v", named, shards)
	}
	listen := regexp.MustCompile(`(?m)^\s*listen\s+(\d+);`).FindStringSubmatch(conf)
	if listen == nil || !slices.Contains(lb.Ports, fmt.Sprintf("8082:%s", listen[1])) {
		t.Errorf("nginx listens on %v but the published ports are %v", listen, lb.Ports)
	}
	for _, want := range []string{
		"hash $perpetuity_route consistent;",
		`"~^/k/(?<perpetuity_path_key>[^/]+)/" $perpetuity_path_key;`,
		"$http_x_perpetuity_key",
		"max_fails=",
		"proxy_next_upstream error timeout http_503;",
		"proxy_buffering off;",
		"proxy_read_timeout 1h;",
		"proxy_http_version 1.1;",
		"X-Forwarded-For $proxy_add_x_forwarded_for",
		// Error lines quote the request line, key in the path included.
		"error_log /var/log/nginx/error.log crit;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("deploy/nginx/perpetuity.conf lacks %q", want)
		}
	}
	// The key must not reach nginx's log: the format names neither
	// $request nor $request_uri nor $uri.
	format := regexp.MustCompile(`(?s)log_format perpetuity (.*?);`).FindStringSubmatch(conf)
	if format == nil {
		t.Fatal("no log_format perpetuity")
	}
	for _, leak := range []string{"$request ", "$request\"", "$request_uri", "$uri", "$http_"} {
		if strings.Contains(format[1], leak) {
			t.Errorf("the access log format logs %s, which carries the key", leak)
		}
	}
}
