// Package config reads and writes kandev's configuration file,
// $XDG_CONFIG_HOME/kandev/config.toml, and resolves each setting with its
// precedence: flag (applied by the caller) > environment > file > built-in.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/kandev/kandev/core"
)

// PathEnv overrides where the file lives (tests, several setups).
const PathEnv = "KANDEV_CONFIG"

// Key is one setting kandev reads from the file.
type Key struct {
	Name string `json:"key"`
	// Env is the environment variable that overrides the file.
	Env string `json:"env"`
	// Default is the built-in value, as text ("" for profile: picked at
	// run time from the agents found on PATH).
	Default string `json:"default"`
	Doc     string `json:"doc"`
	kind    kind
	values  []string
	// secret: List shows whether it is set, never its value.
	secret bool
}

type kind int

const (
	kindString kind = iota
	kindEnum
	kindDuration
	kindBool
	kindBudget
	kindRates
	kindMCPServers
	kindLimits
)

// Keys lists every setting, in the order the documentation gives them.
func Keys() []Key {
	return []Key{
		{Name: "profile", Env: "KANDEV_PROFILE", Default: "",
			Doc: "default agent profile of a new top-level task (unset: the first built-in agent found on PATH, else mock)"},
		{Name: "permission", Env: "KANDEV_PERMISSION", Default: "ask", kind: kindEnum, values: []string{"allow", "deny", "ask"},
			Doc: "answer to an agent's permission request on a normal task: allow, deny or ask you (a profile's own --permission wins)"},
		{Name: "autopilot_permission", Env: "KANDEV_AUTOPILOT_PERMISSION", Default: "allow", kind: kindEnum, values: []string{"allow", "deny"},
			Doc: "answer to an agent's permission request on an autopilot task, where nobody is asked: allow or deny (a profile's own --autopilot-permission wins)"},
		{Name: "sandbox", Env: "KANDEV_SANDBOX", Default: "none", kind: kindEnum, values: []string{"none", "bwrap", "docker", "podman"},
			Doc: "where a new normal task's agent runs: none (the host), bwrap, docker or podman (a profile's --sandbox and task create --sandbox win; docs/sandbox.md)"},
		{Name: "autopilot_sandbox", Env: "KANDEV_AUTOPILOT_SANDBOX", Default: "auto", kind: kindEnum, values: []string{"auto", "none", "bwrap", "docker", "podman"},
			Doc: "where a new autopilot task's agent runs: auto (bwrap where bubblewrap is installed, else none), none, bwrap, docker or podman"},
		{Name: "host", Env: "KANDEV_HOST", Default: "",
			Doc: "host a new top-level task's agent runs on without --host: a host's name (kandev host list), auto (one with a free slot) or local (unset: this machine; docs/hosts.md)"},
		{Name: "idle_timeout", Env: "KANDEV_IDLE_TIMEOUT", Default: "15m", kind: kindDuration,
			Doc: "how long an agent whose task is held between turns keeps its process (0 keeps it up)"},
		{Name: "start_timeout", Env: "KANDEV_AGENT_START_TIMEOUT", Default: "60s", kind: kindDuration,
			Doc: "how long an agent has to answer initialize and session setup (a profile's --start-timeout wins)"},
		{Name: "workspace", Env: "KANDEV_WORKSPACE", Default: "auto", kind: kindEnum, values: []string{"auto", "worktree", "shared"},
			Doc: "where a new top-level task's agent works without --workspace: auto (a git worktree of its own inside a repository, else the directory as it is), worktree, or shared (the directory as it is)"},
		{Name: "notifications", Env: "KANDEV_NOTIFICATIONS", Default: "false", kind: kindBool,
			Doc: "desktop notifications (notify-send, osascript) from the daemon when a task starts needing you"},
		{Name: "notify_command", Env: "KANDEV_NOTIFY_COMMAND", Default: "",
			Doc: "a shell command the daemon runs when a task starts needing you, one JSON object on its stdin (for ntfy, Slack, a phone); unset: none"},
		{Name: "web_listen", Env: "KANDEV_WEB_LISTEN", Default: "",
			Doc: "address the daemon serves the web inbox on, such as 127.0.0.1:8421 (unset: no web inbox; kandev serve --web wins; beyond loopback it needs web_tls_cert and web_tls_key, or web_allow_plain_http; docs/web.md)"},
		{Name: "web_url", Env: "KANDEV_WEB_URL", Default: "",
			Doc: "the web inbox's address as a phone reaches it (a tunnel's, Tailscale serve's or a proxy's), used in kandev web pair and notification links (unset: from web_listen)"},
		{Name: "web_tls_cert", Env: "KANDEV_WEB_TLS_CERT", Default: "",
			Doc: "certificate file (PEM) the web inbox serves HTTPS with, beside web_tls_key (unset: plain HTTP, on loopback only)"},
		{Name: "web_tls_key", Env: "KANDEV_WEB_TLS_KEY", Default: "",
			Doc: "private key file (PEM) of web_tls_cert"},
		{Name: "web_allow_plain_http", Env: "KANDEV_WEB_ALLOW_PLAIN_HTTP", Default: "false", kind: kindBool,
			Doc: "serve the web inbox over plain HTTP on an address beyond loopback, with a loud warning (you accept that the network sees the device cookie; ADR 0080)"},
		{Name: "autopilot_budget", Env: "KANDEV_AUTOPILOT_BUDGET", Default: "", kind: kindBudget,
			Doc: "budget of a new top-level autopilot task created without --budget, shared by its subtree: 5USD or 2M-tokens (unset: none)"},
		{Name: "currency_rates", Env: "KANDEV_CURRENCY_RATES", Default: "", kind: kindRates,
			Doc: "exchange rates a budget counts a cost in another currency with: EUR/USD=1.08,GBP/USD=1.27 (one EUR is 1.08 USD; inverses implied, never chained). Without one, a cost in another currency than its budget's halts the tree (unset: none)"},
		{Name: "mcp_servers", Env: "KANDEV_MCP_SERVERS", Default: "", kind: kindMCPServers,
			Doc: "MCP servers every agent that takes injected servers is given after kandev's and its profile's own, run inside its sandbox: NAME=COMMAND ARG... entries separated by ';' (a profile's --mcp-server of the same name wins; unset: none; docs/sandbox.md)"},
		{Name: "spend_limits", Env: "KANDEV_SPEND_LIMITS", Default: "", kind: kindLimits,
			Doc: "spend limits per UTC day or week for the whole home, a profile or a role: day=5USD,profile:claude/week=2M-tokens,role:coder/day=1USD; a limit set with kandev limit set for the same scope and period wins (unset: none; docs/usage.md)"},
		{Name: "linear_api_key", Env: "LINEAR_API_KEY", Default: "", secret: true,
			Doc: "Linear personal API key, for task create --from linear:... and kandev issues --team (keep the file private; docs/trackers.md)"},
		{Name: "linear_team", Env: "KANDEV_LINEAR_TEAM", Default: "",
			Doc: "Linear team key kandev issues lists without --team, in a repository whose origin is neither GitHub nor GitLab (unset: none)"},
		{Name: "linear_url", Env: "KANDEV_LINEAR_URL", Default: "https://api.linear.app/graphql",
			Doc: "Linear's GraphQL endpoint (for a proxy, or a test's local server)"},
	}
}

// Lookup returns the key of that name.
func Lookup(name string) (Key, bool) {
	for _, k := range Keys() {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

func keyNames() string {
	var names []string
	for _, k := range Keys() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// Choices are the values an enumerated or boolean key takes (nil for a
// free value), for shell completion.
func (k Key) Choices() []string {
	switch k.kind {
	case kindEnum:
		return append([]string(nil), k.values...)
	case kindBool:
		return []string{"true", "false"}
	}
	return nil
}

// Validate checks a value for the key and returns it in canonical form.
func (k Key) Validate(v string) (string, error) {
	switch k.kind {
	case kindEnum:
		for _, ok := range k.values {
			if v == ok {
				return v, nil
			}
		}
		return "", fmt.Errorf("%s: %q is not one of %s", k.Name, v, strings.Join(k.values, ", "))
	case kindDuration:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return "", fmt.Errorf("%s: %q is not a duration such as 90s or 15m", k.Name, v)
		}
		if k.Name == "start_timeout" && d == 0 {
			return "", fmt.Errorf("%s: must be positive", k.Name)
		}
		return d.String(), nil
	case kindBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("%s: %q is not true or false", k.Name, v)
		}
		return strconv.FormatBool(b), nil
	case kindBudget:
		a, err := core.ParseAmount(v)
		if err != nil {
			return "", fmt.Errorf("%s: %s", k.Name, err.Error())
		}
		return a.String(), nil
	case kindMCPServers:
		list, err := core.ParseMCPServerList(v)
		if err != nil {
			return "", err
		}
		if len(list) == 0 {
			return "", fmt.Errorf("%s: empty value", k.Name)
		}
		return core.FormatMCPServerList(list), nil
	case kindLimits:
		ls, err := core.ParseLimits(v)
		if err != nil {
			return "", fmt.Errorf("%s: %s", k.Name, err.Error())
		}
		if len(ls) == 0 {
			return "", fmt.Errorf("%s: empty value", k.Name)
		}
		return strings.TrimSpace(v), nil
	case kindRates:
		r, err := core.ParseRates(v)
		if err != nil {
			return "", fmt.Errorf("%s: %s", k.Name, err.Error())
		}
		if len(r) == 0 {
			return "", fmt.Errorf("%s: empty value", k.Name)
		}
		return r.String(), nil
	default:
		if strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%s: empty value", k.Name)
		}
		return v, nil
	}
}

// Path is the file's location: $KANDEV_CONFIG, else
// $XDG_CONFIG_HOME/kandev/config.toml, else ~/.config/kandev/config.toml.
func Path(getenv func(string) string) (string, error) {
	if p := getenv(PathEnv); p != "" {
		return filepath.Abs(p)
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "kandev", "config.toml"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the kandev config file: set %s or XDG_CONFIG_HOME: %w", PathEnv, err)
	}
	return filepath.Join(h, ".config", "kandev", "config.toml"), nil
}

// File is the configuration file's contents: canonical text values of the
// keys it sets.
type File struct {
	Path   string
	values map[string]string
}

// MaxFileSize bounds the configuration file: a few keys, never megabytes.
const MaxFileSize = 1 << 20

// Read loads the file at path. A missing file sets nothing. Anything else
// that is not a regular file (a FIFO, a device) is refused without
// waiting on it, and so is a file over MaxFileSize. A parse error, an
// unknown key or a bad value is an error naming the file and the line: a
// file that does not parse is never read as a partial or empty one.
func Read(path string) (File, error) {
	f := File{Path: path, values: map[string]string{}}
	b, err := readRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read config %s: %w", path, err)
	}
	text := string(b)
	raw := map[string]any{}
	if _, err := toml.Decode(text, &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return f, fmt.Errorf("config %s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		return f, fmt.Errorf("config %s: %w", path, err)
	}
	at := func(name string) string {
		if n := keyLine(text, name); n > 0 {
			return fmt.Sprintf("%s:%d", path, n)
		}
		return path
	}
	// Sorted, so a file with several mistakes always names the same first.
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := raw[name]
		k, ok := Lookup(name)
		if !ok {
			return f, fmt.Errorf("config %s: unknown key %q (known keys: %s)", at(name), name, keyNames())
		}
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case bool:
			if k.kind != kindBool {
				return f, fmt.Errorf("config %s: %s must be a string, not a boolean", at(name), name)
			}
			text = strconv.FormatBool(x)
		default:
			return f, fmt.Errorf("config %s: %s has a value of type %T; write it as a string", at(name), name, v)
		}
		canon, err := k.Validate(text)
		if err != nil {
			return f, fmt.Errorf("config %s: %w", at(name), err)
		}
		f.values[name] = canon
	}
	return f, nil
}

// readRegular reads a regular file of at most MaxFileSize bytes. It opens
// without blocking (a FIFO with no writer would hang every command, and
// signals with it) and checks what it opened, not what the name was.
func readRegular(path string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fileKind(fi.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	return b, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.Type().String()
}

// keyLine is the 1-based line where a top-level key (or a table of that
// name) is written, or 0.
func keyLine(text, name string) int {
	for i, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		for _, spelled := range []string{name, `"` + name + `"`, "'" + name + "'"} {
			rest, ok := strings.CutPrefix(l, spelled)
			if !ok {
				rest, ok = strings.CutPrefix(l, "["+spelled)
			}
			if ok {
				rest = strings.TrimSpace(rest)
				if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "]") || strings.HasPrefix(rest, ".") {
					return i + 1
				}
			}
		}
	}
	return 0
}

// Get returns the file's value for the key, if it sets one.
func (f File) Get(name string) (string, bool) {
	v, ok := f.values[name]
	return v, ok
}

// Set validates the value and rewrites the file with the key set, keeping
// the other keys it had (comments are not kept). The file is replaced
// atomically.
func Set(path, name, value string) (string, error) {
	k, ok := Lookup(name)
	if !ok {
		return "", fmt.Errorf("unknown config key %q (known keys: %s)", name, keyNames())
	}
	canon, err := k.Validate(value)
	if err != nil {
		return "", err
	}
	f, err := Read(path)
	if err != nil {
		return "", err
	}
	f.values[name] = canon
	return canon, f.write()
}

// Unset removes the key from the file.
func Unset(path, name string) error {
	if _, ok := Lookup(name); !ok {
		return fmt.Errorf("unknown config key %q (known keys: %s)", name, keyNames())
	}
	f, err := Read(path)
	if err != nil {
		return err
	}
	delete(f.values, name)
	return f.write()
}

func (f File) write() error {
	out := map[string]any{}
	for name, v := range f.values {
		k, _ := Lookup(name)
		if k.kind == kindBool {
			out[name] = v == "true"
		} else {
			out[name] = v
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# kandev configuration: see docs/config.md. Rewritten by `kandev config set`.\n")
	if err := toml.NewEncoder(&buf).Encode(out); err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	// A linked config (a dotfiles repository) is written at its target:
	// replacing the link with a file would cut it off.
	target := f.Path
	if real, err := filepath.EvalSymlinks(f.Path); err == nil {
		target = real
	} else if link, err := os.Readlink(f.Path); err == nil {
		// A link to a file not made yet: make it there.
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(f.Path), link)
		}
		target = link
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("create config directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".config-*.toml")
	if err != nil {
		return fmt.Errorf("write config %s: %w", f.Path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("write config %s: %w", f.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write config %s: %w", f.Path, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("write config %s: %w", f.Path, err)
	}
	return nil
}

// Source says where a setting's value came from.
type Source string

// The sources, highest precedence first (a flag is the caller's).
const (
	SourceEnv     Source = "env"
	SourceFile    Source = "file"
	SourceDefault Source = "default"
)

// Value is one resolved setting.
type Value struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source Source `json:"source"`
	Env    string `json:"env"`
}

// Config is the file plus the environment: everything but flags.
type Config struct {
	File   File
	getenv func(string) string
}

// Load finds and reads the file and binds the environment.
func Load(getenv func(string) string) (Config, error) {
	p, err := Path(getenv)
	if err != nil {
		return Config{}, err
	}
	f, err := Read(p)
	if err != nil {
		return Config{}, err
	}
	return Config{File: f, getenv: getenv}, nil
}

// Get resolves one key: environment, else file, else built-in. A bad value
// in the environment is an error naming the variable.
func (c Config) Get(name string) (Value, error) {
	k, ok := Lookup(name)
	if !ok {
		return Value{}, fmt.Errorf("unknown config key %q (known keys: %s)", name, keyNames())
	}
	if c.getenv != nil {
		if v := c.getenv(k.Env); v != "" {
			canon, err := k.Validate(v)
			if err != nil {
				return Value{}, fmt.Errorf("$%s: %w", k.Env, err)
			}
			return Value{Key: name, Value: canon, Source: SourceEnv, Env: k.Env}, nil
		}
	}
	if v, ok := c.File.Get(name); ok {
		return Value{Key: name, Value: v, Source: SourceFile, Env: k.Env}, nil
	}
	return Value{Key: name, Value: k.Default, Source: SourceDefault, Env: k.Env}, nil
}

// List resolves every key, sorted by name.
func (c Config) List() ([]Value, error) {
	var out []Value
	for _, k := range Keys() {
		v, err := c.Get(k.Name)
		if err != nil {
			return nil, err
		}
		if k.secret && v.Value != "" {
			v.Value = "(set)" // a listing is shown and pasted; a key is not
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Duration resolves a duration key.
func (c Config) Duration(name string) (time.Duration, error) {
	v, err := c.Get(name)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
