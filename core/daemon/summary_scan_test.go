package daemon

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// TestScanTaskSummaries: scanning gives, line by line, every field a
// summary carries, and refuses a damaged body; the caller's own error
// stops the scan and comes back unchanged.
func TestScanTaskSummaries(t *testing.T) {
	var tasks []core.Task
	for _, tt := range trickyTasks() {
		if marshals(tt) {
			tasks = append(tasks, tt)
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for len(tasks) < 500 {
		if rt := randomTask(rng); marshals(rt) {
			tasks = append(tasks, rt)
		}
	}
	ptrs := make([]*core.Task, len(tasks))
	for i := range tasks {
		ptrs[i] = &tasks[i]
	}
	var buf bytes.Buffer
	if err := wire.WriteTaskSummaries(&buf, ptrs); err != nil {
		t.Fatal(err)
	}
	body := buf.String()
	want := make([]core.Task, len(tasks))
	for i := range tasks {
		want[i] = summaryOf(t, tasks[i])
	}
	var got []core.Task
	err := wire.ScanTaskSummaries(strings.NewReader(body), nil, func(st *core.Task) error {
		c := *st // the task is reused: keep a deep copy
		if st.Assignee != nil {
			a := *st.Assignee
			c.Assignee = &a
		}
		if st.HandedBy != nil {
			a := *st.HandedBy
			c.HandedBy = &a
		}
		if st.Session != nil {
			s := *st.Session
			c.Session = &s
		}
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("task %d:\n got %#v\nwant %#v", i, got[i], want[i])
			}
		}
		t.Fatalf("scanned %d tasks, wrote %d", len(got), len(want))
	}

	lastLine := strings.LastIndexByte(body[:len(body)-1], '\n')
	for name, bad := range map[string]string{
		"cut mid-line":   body[:len(body)-3],
		"a line missing": body[:lastLine+1],
		"empty":          "",
	} {
		if err := wire.ScanTaskSummaries(strings.NewReader(bad), nil, func(*core.Task) error { return nil }); err == nil {
			t.Errorf("%s: scanned without an error", name)
		}
	}

	stop := errors.New("enough")
	n := 0
	err = wire.ScanTaskSummaries(strings.NewReader(body), nil, func(*core.Task) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Fatalf("stopped scan: err %v after %d tasks, want the caller's error after 3", err, n)
	}
}
