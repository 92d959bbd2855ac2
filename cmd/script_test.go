package cmd_test

// CLI scripts: testscript runs cmd/testdata/script/*.txtar against the real
// kandev binary, built once. Every script gets its own kandev home; the
// daemon the script's first command started in the background is stopped
// when the script ends.
//
// Extra script commands (see scriptCmds):
//
//	exits CODE PROG [ARG...]     run PROG (like exec) and require exit status CODE
//	stdout2env NAME              set $NAME to the last command's stdout, trimmed
//	json2env NAME PATH           set $NAME to the value at PATH of the last stdout's JSON
//	[!] json PATH WANT           the last stdout is JSON and the value at PATH is (not) WANT
//	jsonfields [-each] FIELD...  the last stdout is a JSON object (with -each: an
//	                             array whose every element is one) having FIELD...
//	stopdaemon                   stop the script's daemon now (SIGTERM, wait)
//	linear DIR                   serve Linear's GraphQL API from recorded answers in
//	                             DIR (linearServer) and set $KANDEV_LINEAR_URL to it
//
// PATH is dot-separated: object keys, array indexes, and "#" for the length
// of an array or object ("0.id", "#", "session.state"). WANT is compared
// with a string's text, or with the compact JSON of any other value
// ("true", "null", "3").

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/store"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

func TestScripts(t *testing.T) {
	bin := daemontest.Binary(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds:                scriptCmds(),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			// BINDIR alone as PATH hides whatever agents this machine has.
			env.Setenv("BINDIR", filepath.Dir(bin))
			// Unix socket paths must stay under 108 bytes: keep the home
			// short and outside the (possibly long) work directory.
			home, err := os.MkdirTemp("", "ks-")
			if err != nil {
				return err
			}
			env.Setenv("KANDEV_HOME", home)
			env.Setenv("XDG_DATA_HOME", "")
			// Scripts get the mock unless they say otherwise, whatever
			// agents this machine has on PATH, and no user config.toml.
			env.Setenv("KANDEV_PROFILE", "mock")
			env.Setenv("KANDEV_CONFIG", filepath.Join(env.WorkDir, "config.toml"))
			env.Setenv("XDG_CONFIG_HOME", "")
			env.Setenv("SCHEMA", strconv.Itoa(store.SchemaVersion()))
			env.Defer(func() {
				if err := stopDaemon(home); err != nil {
					env.T().Log(err)
				}
				os.RemoveAll(home)
			})
			return nil
		},
	})
}

func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exits": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 2 {
				ts.Fatalf("usage: exits CODE PROG [ARG...]")
			}
			want, err := strconv.Atoi(args[0])
			ts.Check(err)
			got := 0
			if err := ts.Exec(args[1], args[2:]...); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					ts.Fatalf("%s: %v", args[1], err)
				}
				got = ee.ExitCode()
			}
			if got != want {
				ts.Fatalf("%s exited with %d, want %d", strings.Join(args[1:], " "), got, want)
			}
		},
		"stdout2env": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: stdout2env NAME")
			}
			v := strings.TrimSpace(ts.ReadFile("stdout"))
			if v == "" {
				ts.Fatalf("stdout2env %s: stdout is empty", args[0])
			}
			ts.Setenv(args[0], v)
		},
		"json2env": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: json2env NAME PATH")
			}
			v, err := jsonAt(decodeStdout(ts), args[1])
			if err != nil {
				ts.Fatalf("json2env %s: %v", args[1], err)
			}
			ts.Setenv(args[0], v)
		},
		"json": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: [!] json PATH WANT")
			}
			v := decodeStdout(ts)
			got, err := jsonAt(v, args[0])
			if err != nil {
				if neg {
					return
				}
				ts.Fatalf("json %s: %v", args[0], err)
			}
			match := got == args[1]
			if match && neg {
				ts.Fatalf("json %s is %s, want anything else", args[0], got)
			}
			if !match && !neg {
				ts.Fatalf("json %s is %s, want %s", args[0], got, args[1])
			}
		},
		"jsonfields": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg {
				ts.Fatalf("jsonfields does not support !")
			}
			each := len(args) > 0 && args[0] == "-each"
			if each {
				args = args[1:]
			}
			v := decodeStdout(ts)
			var objs []any
			if each {
				arr, ok := v.([]any)
				if !ok {
					ts.Fatalf("stdout is JSON %T, want an array", v)
				}
				objs = arr
			} else {
				objs = []any{v}
			}
			for i, o := range objs {
				m, ok := o.(map[string]any)
				if !ok {
					ts.Fatalf("element %d is JSON %T, want an object", i, o)
				}
				for _, f := range args {
					if _, ok := m[f]; !ok {
						ts.Fatalf("element %d has no field %q: %v", i, f, m)
					}
				}
			}
		},
		"linear": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: linear DIR")
			}
			srv := httptest.NewServer(linearServer(ts, ts.MkAbs(args[0])))
			ts.Defer(srv.Close)
			ts.Setenv("KANDEV_LINEAR_URL", srv.URL)
		},
		"stopdaemon": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 0 {
				ts.Fatalf("usage: stopdaemon")
			}
			ts.Check(stopDaemon(ts.Getenv("KANDEV_HOME")))
		},
	}
}

// decodeStdout parses the last command's stdout as exactly one JSON value.
func decodeStdout(ts *testscript.TestScript) any {
	out := ts.ReadFile("stdout")
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		ts.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if dec.More() {
		ts.Fatalf("stdout holds more than one JSON value:\n%s", out)
	}
	return v
}

// jsonAt walks path through v and renders what it finds.
func jsonAt(v any, path string) (string, error) {
	if path != "." {
		for _, step := range strings.Split(path, ".") {
			switch x := v.(type) {
			case map[string]any:
				if step == "#" {
					v = json.Number(strconv.Itoa(len(x)))
					continue
				}
				e, ok := x[step]
				if !ok {
					return "", fmt.Errorf("no field %q", step)
				}
				v = e
			case []any:
				if step == "#" {
					v = json.Number(strconv.Itoa(len(x)))
					continue
				}
				i, err := strconv.Atoi(step)
				if err != nil || i < 0 || i >= len(x) {
					return "", fmt.Errorf("no element %q in an array of %d", step, len(x))
				}
				v = x[i]
			default:
				return "", fmt.Errorf("cannot take %q of %T", step, v)
			}
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// stopDaemon stops the daemon serving home, if one runs: SIGTERM to the
// pid in its lock file, then wait until the lock is released (the daemon
// releases it last, after closing the database). A probe lock that we get
// at once means no daemon holds the home.
func stopDaemon(home string) error {
	lock := filepath.Join(home, "daemon.lock")
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		return nil
	}
	b, err := os.ReadFile(lock)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("daemon lock %s holds %q, not a pid", lock, b)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("daemon %d did not stop within 20s of SIGTERM; killed it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// linearServer answers as Linear's GraphQL endpoint does, from recorded
// answers in dir: a key other than lin_api_test is refused as Linear
// refuses it (unauth.json, HTTP 400); an issue query reads issue-ID.json
// (notfound.json when there is none); a listing issues.json. Every
// request's variables are appended to dir/requests.log, one line each.
func linearServer(ts *testscript.TestScript, dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string          `json:"query"`
			Variables json.RawMessage `json:"variables"`
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if r.Method != http.MethodPost || json.Unmarshal(b, &req) != nil {
			http.Error(w, `{"errors":[{"message":"bad request"}]}`, http.StatusBadRequest)
			return
		}
		if f, err := os.OpenFile(filepath.Join(dir, "requests.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s\n", req.Variables)
			f.Close()
		}
		var vars struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(req.Variables, &vars)
		status, file := http.StatusOK, "issues.json"
		switch {
		case r.Header.Get("Authorization") != "lin_api_test":
			status, file = http.StatusBadRequest, "unauth.json"
		case strings.Contains(req.Query, "issue(id:"):
			file = "issue-" + vars.ID + ".json"
			if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
				file = "notfound.json"
			}
		}
		out, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			ts.Logf("linear stand-in: %v", err)
			status = http.StatusInternalServerError
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(out)
	})
}
