package mcpserve

import (
	"path/filepath"
	"testing"
	"time"
)

func TestProgressInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"":      DefaultProgressInterval,
		"junk":  DefaultProgressInterval,
		"-1s":   DefaultProgressInterval,
		"0s":    DefaultProgressInterval,
		"250ms": 250 * time.Millisecond,
		"15s":   15 * time.Second,
		"1m":    MaxProgressInterval,
	} {
		if got := progressInterval(in); got != want {
			t.Errorf("progressInterval(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestResolveHomeOrder(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"/flag", map[string]string{"KANDEV_HOME": "/kh", "XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/flag"},
		{"", map[string]string{"KANDEV_HOME": "/kh", "XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/kh"},
		{"", map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/xdg/kandev"},
		{"", map[string]string{"HOME": "/h"}, "/h/.local/share/kandev"},
	}
	for _, tc := range cases {
		h, err := resolveHome(tc.flag, env(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if h.Dir != filepath.Clean(tc.want) {
			t.Errorf("resolveHome(%q, %v) = %s, want %s", tc.flag, tc.env, h.Dir, tc.want)
		}
	}
}
