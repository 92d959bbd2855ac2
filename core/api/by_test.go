package api

import (
	"encoding/json"
	"testing"

	"github.com/kandev/kandev/core"
)

// A queued item's sender and a review comment's author, which carry a
// core.By, keep the wire shape they had as strings.
func TestByFieldsKeepTheirWireShape(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{QueuedItem{ID: 2, Position: 1, Kind: "wake", Sender: core.Kandev(), Text: "t"},
			`{"id":2,"position":1,"kind":"wake","sender":"kandev","interrupt":false,"text":"t","queued_at":"0001-01-01T00:00:00Z"}`},
		{ReviewComment{ID: 3, Author: core.ParseBy("task:k2")},
			`{"id":3,"task_id":"","author":"task:k2","file":"","line":0,"end_line":0,"text":"","lines":"","hunk":"","state":"","created_at":"0001-01-01T00:00:00Z"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%T: %s, %v\nwant %s", c.v, b, err, c.want)
		}
	}
}
