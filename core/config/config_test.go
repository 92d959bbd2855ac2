package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPathPrecedence(t *testing.T) {
	p, err := Path(env(map[string]string{PathEnv: "/x/c.toml", "XDG_CONFIG_HOME": "/xdg"}))
	if err != nil || p != "/x/c.toml" {
		t.Fatalf("KANDEV_CONFIG: got %q, %v", p, err)
	}
	p, err = Path(env(map[string]string{"XDG_CONFIG_HOME": "/xdg"}))
	if err != nil || p != "/xdg/kandev/config.toml" {
		t.Fatalf("XDG_CONFIG_HOME: got %q, %v", p, err)
	}
	p, err = Path(env(nil))
	if err != nil || !strings.HasSuffix(p, filepath.Join(".config", "kandev", "config.toml")) {
		t.Fatalf("default: got %q, %v", p, err)
	}
}

func TestResolvePrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("idle_timeout = \"5m\"\nnotifications = true\nprofile = \"claude\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{PathEnv: path, "KANDEV_PROFILE": "codex", "LINEAR_API_KEY": "lin_api_secret"}
	c, err := Load(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Value{
		"profile":              {Key: "profile", Value: "codex", Source: SourceEnv, Env: "KANDEV_PROFILE"},
		"idle_timeout":         {Key: "idle_timeout", Value: "5m0s", Source: SourceFile, Env: "KANDEV_IDLE_TIMEOUT"},
		"notifications":        {Key: "notifications", Value: "true", Source: SourceFile, Env: "KANDEV_NOTIFICATIONS"},
		"permission":           {Key: "permission", Value: "ask", Source: SourceDefault, Env: "KANDEV_PERMISSION"},
		"autopilot_permission": {Key: "autopilot_permission", Value: "allow", Source: SourceDefault, Env: "KANDEV_AUTOPILOT_PERMISSION"},
		"start_timeout":        {Key: "start_timeout", Value: "60s", Source: SourceDefault, Env: "KANDEV_AGENT_START_TIMEOUT"},
		"workspace":            {Key: "workspace", Value: "auto", Source: SourceDefault, Env: "KANDEV_WORKSPACE"},
		"notify_command":       {Key: "notify_command", Value: "", Source: SourceDefault, Env: "KANDEV_NOTIFY_COMMAND"},
		"autopilot_budget":     {Key: "autopilot_budget", Value: "", Source: SourceDefault, Env: "KANDEV_AUTOPILOT_BUDGET"},
		"currency_rates":       {Key: "currency_rates", Value: "", Source: SourceDefault, Env: "KANDEV_CURRENCY_RATES"},
		"web_listen":           {Key: "web_listen", Value: "", Source: SourceDefault, Env: "KANDEV_WEB_LISTEN"},
		"web_url":              {Key: "web_url", Value: "", Source: SourceDefault, Env: "KANDEV_WEB_URL"},
		"web_tls_cert":         {Key: "web_tls_cert", Value: "", Source: SourceDefault, Env: "KANDEV_WEB_TLS_CERT"},
		"web_tls_key":          {Key: "web_tls_key", Value: "", Source: SourceDefault, Env: "KANDEV_WEB_TLS_KEY"},
		"web_allow_plain_http": {Key: "web_allow_plain_http", Value: "false", Source: SourceDefault, Env: "KANDEV_WEB_ALLOW_PLAIN_HTTP"},
		"spend_limits":         {Key: "spend_limits", Value: "", Source: SourceDefault, Env: "KANDEV_SPEND_LIMITS"},
		"sandbox":              {Key: "sandbox", Value: "none", Source: SourceDefault, Env: "KANDEV_SANDBOX"},
		"autopilot_sandbox":    {Key: "autopilot_sandbox", Value: "auto", Source: SourceDefault, Env: "KANDEV_AUTOPILOT_SANDBOX"},
		"host":                 {Key: "host", Value: "", Source: SourceDefault, Env: "KANDEV_HOST"},
		"mcp_servers":          {Key: "mcp_servers", Value: "", Source: SourceDefault, Env: "KANDEV_MCP_SERVERS"},
		// A secret is listed as set, never shown.
		"linear_api_key": {Key: "linear_api_key", Value: "(set)", Source: SourceEnv, Env: "LINEAR_API_KEY"},
		"linear_team":    {Key: "linear_team", Value: "", Source: SourceDefault, Env: "KANDEV_LINEAR_TEAM"},
		"linear_url":     {Key: "linear_url", Value: "https://api.linear.app/graphql", Source: SourceDefault, Env: "KANDEV_LINEAR_URL"},
	}
	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("List: %d values, want %d", len(list), len(want))
	}
	for _, v := range list {
		if v != want[v.Key] {
			t.Errorf("%s: got %+v, want %+v", v.Key, v, want[v.Key])
		}
	}
	d, err := c.Duration("start_timeout")
	if err != nil || d != 60*time.Second {
		t.Fatalf("start_timeout: %v, %v", d, err)
	}
}

func TestBadEnvValueNamesTheVariable(t *testing.T) {
	c, err := Load(env(map[string]string{PathEnv: filepath.Join(t.TempDir(), "none.toml"), "KANDEV_IDLE_TIMEOUT": "soon"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get("idle_timeout")
	if err == nil || !strings.Contains(err.Error(), "KANDEV_IDLE_TIMEOUT") {
		t.Fatalf("got %v", err)
	}
}

func TestUnknownKeyNamesKeyAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("profile = \"mock\"\ncolour = \"red\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.Contains(err.Error(), `"colour"`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v", err)
	}
}

func TestBadValueInFile(t *testing.T) {
	for _, body := range []string{"permission = \"maybe\"\n", "idle_timeout = 5\n", "workspace = true\n", "autopilot_budget = \"5\"\n", "currency_rates = \"EUR=1.08\"\n", "notifications = \"loud\"\n"} {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		key, _, _ := strings.Cut(body, " ")
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: got %v", body, err)
		}
	}
}

func TestSetKeepsOtherKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "config.toml")
	if _, err := Set(path, "profile", "gemini"); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(path, "notifications", "yes"); err == nil {
		t.Fatal("notifications=yes accepted")
	}
	if got, err := Set(path, "idle_timeout", "90s"); err != nil || got != "1m30s" {
		t.Fatalf("idle_timeout: %q, %v", got, err)
	}
	if _, err := Set(path, "notifications", "true"); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(path, "flavour", "x"); err == nil || !strings.Contains(err.Error(), "flavour") {
		t.Fatalf("unknown key: %v", err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"profile": "gemini", "idle_timeout": "1m30s", "notifications": "true"} {
		if v, ok := f.Get(k); !ok || v != want {
			t.Errorf("%s = %q (%v), want %q", k, v, ok, want)
		}
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "notifications = true") {
		t.Errorf("a boolean is written as a TOML boolean:\n%s", b)
	}
	if err := Unset(path, "profile"); err != nil {
		t.Fatal(err)
	}
	f, _ = Read(path)
	if _, ok := f.Get("profile"); ok {
		t.Error("profile still set after Unset")
	}
	if _, ok := f.Get("idle_timeout"); !ok {
		t.Error("Unset dropped another key")
	}
}
