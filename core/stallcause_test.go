package core

import (
	"encoding/json"
	"testing"
	"time"
)

// A stall stored before Cause existed gets its cause by the rule the
// engine applied to its text then, once, as it is read.
func TestStallCauseOfOldRows(t *testing.T) {
	for _, c := range []struct {
		stored string
		want   StallCause
	}{
		{`{"reason":"Returned","from":"role:eng","detail":"my last words","at":"2026-11-30T12:00:00Z"}`, CauseTurnEnded},
		{`{"reason":"Stalled","from":"role:eng","detail":"run failed: exit status 3","at":"2026-11-30T12:00:00Z","failed":true}`, CauseRunFailed},
		{`{"reason":"Stalled","from":"role:eng","detail":"run failed: exit status 3","at":"2026-11-30T12:00:00Z"}`, CauseRunFailed},
		{`{"reason":"Stalled","from":"role:eng","detail":"unanswered question q1 from subtask k2: the turn ended","at":"2026-11-30T12:00:00Z"}`, CauseUnansweredQuestion},
		{`{"reason":"Stalled","from":"role:eng","detail":"stalled subtask k2 (fix) was reported to this task","at":"2026-11-30T12:00:00Z"}`, CauseStalledSubtask},
		{`{"reason":"Budget","from":"role:eng","detail":"spent 2.00 of 2.00 USD","at":"2026-11-30T12:00:00Z"}`, CauseBudget},
		{`{"reason":"Stuck","from":"role:eng","detail":"","at":"2026-11-30T12:00:00Z"}`, CauseTurnEnded},
	} {
		got, err := ParseStoredStall(c.stored)
		if err != nil {
			t.Fatalf("%s: %v", c.stored, err)
		}
		if got.Cause != c.want {
			t.Errorf("%s: cause %q, want %q", c.stored, got.Cause, c.want)
		}
	}
}

// The stored form keeps the cause, and it wins over what the text reads
// like; the wire shape carries no cause and stays as clients know it.
func TestStallCauseRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, cause := range []StallCause{CauseTurnEnded, CauseRunFailed, CauseUnansweredQuestion, CauseStalledSubtask, CauseBudget} {
		// A detail that reads like another cause: only the stored cause decides.
		st := Stall{Reason: "Stalled", From: ParseBy("role:eng"), Detail: StallUnansweredPrefix + "said the agent", At: at,
			Failed: cause == CauseRunFailed, Cause: cause}
		got, err := ParseStoredStall(st.StoredJSON())
		if err != nil {
			t.Fatal(err)
		}
		if got != st {
			t.Errorf("%s: read back %+v, want %+v", cause, got, st)
		}
	}
	b, err := json.Marshal(Stall{Reason: StallReturned, From: ParseBy("role:eng"), Detail: "bye", At: at, Cause: CauseTurnEnded})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"reason":"Returned","from":"role:eng","detail":"bye","at":"2026-11-30T12:00:00Z"}` {
		t.Errorf("wire %s", b)
	}
	// Read from the wire, a stall has no cause: none was sent.
	var wire Stall
	if err := json.Unmarshal([]byte(`{"reason":"Stalled","from":"role:eng","detail":"`+StallUnansweredPrefix+`q1","at":"2026-11-30T12:00:00Z"}`), &wire); err != nil || wire.Cause != "" {
		t.Errorf("wire stall read with cause %q, %v", wire.Cause, err)
	}
	if _, err := ParseStoredStall("{"); err == nil {
		t.Error("a broken stored stall reads without an error")
	}
	if CauseTurnEnded.Alarm() || !CauseRunFailed.Alarm() || !CauseUnansweredQuestion.Alarm() || !CauseStalledSubtask.Alarm() {
		t.Error("only a turn that merely ended is no alarm")
	}
}
