package daemon

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/daemonclient"
	"github.com/kandev/kandev/core/wire"
)

// TestStopArchiveDiscardRemoveRoleProfileAddPersonInputsTravel: the
// inputs of StopTask, ArchiveTask, DiscardTask, RemoveRole, RemoveProfile
// and AddPerson reach the daemon's side as the client was given them,
// every field set (filled), through the client, the socket and the routes'
// adapters. An option added to one of them and lost on the way fails here.
func TestStopArchiveDiscardRemoveRoleProfileAddPersonInputsTravel(t *testing.T) {
	var gotKey string
	var got any
	record := func(key string, in any) { gotKey, got = key, in }
	m := http.NewServeMux()
	route(m, wire.StopTask, keyedOptions(func(_ context.Context, key string, in api.StopTaskInput) (api.StopResult, error) {
		record(key, in)
		return api.StopResult{}, nil
	}))
	route(m, wire.ArchiveTask, keyedOptions(func(_ context.Context, key string, in api.ArchiveTaskInput) (core.Task, error) {
		record(key, in)
		return core.Task{}, nil
	}))
	route(m, wire.DiscardTask, keyedOptions(func(_ context.Context, key string, in api.DiscardTaskInput) (core.Task, error) {
		record(key, in)
		return core.Task{}, nil
	}))
	route(m, wire.RemoveRole, keyedOptions(func(_ context.Context, key string, in api.RemoveRoleInput) (api.Role, error) {
		record(key, in)
		return api.Role{}, nil
	}))
	route(m, wire.RemoveProfile, keyedOptions(func(_ context.Context, key string, in api.RemoveProfileInput) (core.Profile, error) {
		record(key, in)
		return core.Profile{}, nil
	}))
	route(m, wire.AddPerson, func(_ context.Context, in api.AddPersonInput) (api.Person, error) {
		record("", in)
		return api.Person{}, nil
	})
	c := serveOn(t, m)
	ctx := context.Background()

	stop, archive, discard := filled[api.StopTaskInput](t), filled[api.ArchiveTaskInput](t), filled[api.DiscardTaskInput](t)
	role, profile, person := filled[api.RemoveRoleInput](t), filled[api.RemoveProfileInput](t), filled[api.AddPersonInput](t)
	cases := []struct {
		name, key string
		in        any
		send      func(key string) error
	}{
		{"StopTask", "t 1", stop, func(k string) error { _, err := c.StopTask(ctx, k, stop); return err }},
		{"ArchiveTask", "t1", archive, func(k string) error { _, err := c.ArchiveTask(ctx, k, archive); return err }},
		{"DiscardTask", "t1", discard, func(k string) error { _, err := c.DiscardTask(ctx, k, discard); return err }},
		{"RemoveRole", "dev", role, func(k string) error { _, err := c.RemoveRole(ctx, k, role); return err }},
		{"RemoveProfile", "p/q", profile, func(k string) error { _, err := c.RemoveProfile(ctx, k, profile); return err }},
		{"AddPerson", "", person, func(string) error { _, err := c.AddPerson(ctx, person); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gotKey, got = "", nil
			if err := tc.send(tc.key); err != nil {
				t.Fatal(err)
			}
			if gotKey != tc.key || !reflect.DeepEqual(got, tc.in) {
				t.Errorf("received %q %#v, sent %q %#v", gotKey, got, tc.key, tc.in)
			}
		})
	}
}

// serveOn serves m on a socket of its own and returns a client of it.
func serveOn(t *testing.T, m http.Handler) *daemonclient.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "kdopt") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := daemonclient.Dial(filepath.Join(dir, "s"))
	t.Cleanup(c.Close)
	return c
}

// filled is a T with every field set to something other than its zero
// value, so that a field the wire drops shows. A field of a kind it does
// not know fails the test: teach it the kind.
func filled[T any](t *testing.T) T {
	t.Helper()
	var v T
	rv := reflect.ValueOf(&v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x " + rv.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(7 + i))
		case reflect.Slice:
			if f.Type().Elem().Kind() != reflect.String {
				t.Fatalf("filled: %s.%s: a slice of %s", rv.Type(), rv.Type().Field(i).Name, f.Type().Elem())
			}
			f.Set(reflect.ValueOf([]string{"a", "b"}).Convert(f.Type()))
		default:
			t.Fatalf("filled: %s.%s: kind %s", rv.Type(), rv.Type().Field(i).Name, f.Kind())
		}
	}
	return v
}
