package core

import (
	"encoding/json"
	"testing"
	"time"
)

func TestStallJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		stored string
		want   Stall
	}{
		{"failed, as written now",
			`{"reason":"Stalled","from":"role:eng","detail":"run failed: exit status 3","at":"2026-11-30T12:00:00Z","failed":true}`,
			Stall{Reason: "Stalled", From: ParseBy("role:eng"), Detail: "run failed: exit status 3", At: at, Failed: true}},
		{"failed, as written before the flag (the prefix alone said so)",
			`{"at":"2026-11-30T12:00:00Z","detail":"run failed: exit status 3","from":"role:eng","reason":"Stalled"}`,
			Stall{Reason: "Stalled", From: ParseBy("role:eng"), Detail: "run failed: exit status 3", At: at, Failed: true}},
		{"ended without handing on, before the flag",
			`{"at":"2026-11-30T12:00:00Z","detail":"my last words","from":"role:eng","reason":"Returned"}`,
			Stall{Reason: StallReturned, From: ParseBy("role:eng"), Detail: "my last words", At: at}},
		{"the flag wins over a detail that merely reads like the prefix",
			`{"reason":"Stalled","from":"role:eng","detail":"run failed: said the agent","at":"2026-11-30T12:00:00Z","failed":false}`,
			Stall{Reason: "Stalled", From: ParseBy("role:eng"), Detail: "run failed: said the agent", At: at}},
	} {
		var got Stall
		if err := json.Unmarshal([]byte(c.stored), &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: read %+v, want %+v", c.name, got, c.want)
		}
	}
	// The wire shape: unchanged for a stall that is not a failed run;
	// "failed": true added for one that is.
	b, _ := json.Marshal(Stall{Reason: StallReturned, From: ParseBy("role:eng"), Detail: "bye", At: at})
	if string(b) != `{"reason":"Returned","from":"role:eng","detail":"bye","at":"2026-11-30T12:00:00Z"}` {
		t.Errorf("wire %s", b)
	}
	b, _ = json.Marshal(Stall{Reason: "Stalled", From: ParseBy("role:eng"), Detail: StallFailedPrefix + "exit status 3", At: at, Failed: true})
	if string(b) != `{"reason":"Stalled","from":"role:eng","detail":"run failed: exit status 3","at":"2026-11-30T12:00:00Z","failed":true}` {
		t.Errorf("wire %s", b)
	}
}
