package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev/core"
)

// The hand-rolled task encoder must write exactly what json.Marshal does.

func TestAppendTaskMatchesMarshal(t *testing.T) {
	for i, task := range trickyTasks() {
		assertSameJSON(t, i, task)
	}
}

// TestAppendTaskCoversEveryField fails when core.Task gains a field
// appendTask does not write: each field alone, then all of them together.
func TestAppendTaskCoversEveryField(t *testing.T) {
	if !fastTaskJSON() {
		t.Error("appendTask disagrees with json.Marshal on a fully set core.Task: teach it the new fields (task listings fall back to encoding/json until then)")
	}
	typ := reflect.TypeFor[core.Task]()
	for i := range typ.NumField() {
		if !typ.Field(i).IsExported() {
			continue
		}
		var task core.Task
		fillValue(reflect.ValueOf(&task).Elem().Field(i), 0)
		want, err := json.Marshal(task)
		if err != nil {
			t.Fatalf("field %s: %v", typ.Field(i).Name, err)
		}
		got, err := appendTask(nil, &task)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("field %s set: appendTask differs from json.Marshal (err %v)\n got: %s\nwant: %s", typ.Field(i).Name, err, got, want)
		}
	}
	assertSameJSON(t, 0, filledTask())
}

func TestAppendTaskMatchesMarshalRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		assertSameJSON(t, i, randomTask(rng))
	}
}

func TestAppendStringEveryByteAndRune(t *testing.T) {
	var sb strings.Builder
	for c := range 256 {
		sb.WriteByte(byte(c)) // every ASCII byte and every lone high byte
	}
	for _, r := range []rune{0x7f, 0x80, 0xff, 0x100, 0x7ff, 0x800, 0x2027, 0x2028, 0x2029, 0x202a,
		0xd7ff, 0xe000, 0xfffd, 0xfffe, 0xffff, 0x10000, 0x10ffff} {
		sb.WriteRune(r)
	}
	// Encoded surrogate, overlong form, truncated sequences.
	sb.WriteString("\xed\xa0\x80 \xc0\xaf \xe2\x80 \xf0\x9f\x98")
	s := sb.String()
	want, _ := json.Marshal(s)
	if got := appendString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("appendString differs from json.Marshal\n got: %q\nwant: %q", got, want)
	}
	for c := range 256 {
		s := string([]byte{'a', byte(c), 'b'})
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("byte %#x: got %q, want %q", c, got, want)
		}
	}
}

func TestWriteTaskArrayMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{0, 1, 2, 3000} { // 3000 tasks cross the flush size several times
		tasks := make([]core.Task, n)
		for i := range tasks {
			for {
				tasks[i] = randomTask(rng)
				if _, err := json.Marshal(tasks[i]); err == nil {
					break
				}
			}
		}
		var buf bytes.Buffer
		if err := writeTaskArray(&buf, tasks); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(tasks)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			want = []byte("[]") // an empty listing is an empty array, never null
		}
		want = append(want, '\n')
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%d tasks: writeTaskArray differs from json.Marshal (%d vs %d bytes)", n, buf.Len(), len(want))
		}
		var back []core.Task
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != n {
			t.Fatalf("%d tasks: output does not read back: %v (%d tasks)", n, err, len(back))
		}
	}
}

func TestWriteTaskArrayRefusesWhatMarshalRefuses(t *testing.T) {
	bad := core.Task{ID: "abc234", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	_, merr := json.Marshal(bad)
	if merr == nil {
		t.Fatal("json.Marshal accepted year 10000")
	}
	err := writeTaskArray(&bytes.Buffer{}, []core.Task{{ID: "ok2345"}, bad})
	if err == nil {
		t.Fatal("writeTaskArray accepted year 10000")
	}
	if err.Error() != merr.Error() {
		t.Fatalf("error %q, want json.Marshal's %q", err, merr)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTaskArrayReportsWriteErrors(t *testing.T) {
	tasks := make([]core.Task, 2000)
	if err := writeTaskArray(failWriter{}, tasks); err == nil || err.Error() != "disk full" {
		t.Fatalf("got %v, want the writer's error", err)
	}
}

func FuzzAppendTask(f *testing.F) {
	f.Add("k3f9qa", "Split <the> auth & \"module\"", "line\nline\t\u2028", "", int64(1700000000123456789), 0, true, 3)
	f.Add("", "\xff\xfe", "\x00\x1f\x7f", "p4rent", int64(0), 19800, false, 0)
	f.Add("é", "日本語", "\\", "x", int64(-62135596800000000), -3600*8, true, -1)
	f.Fuzz(func(t *testing.T, id, title, desc, parent string, nanos int64, offset int, autopilot bool, queued int) {
		zone := time.FixedZone("z", offset%(30*3600))
		at := time.Unix(0, nanos).In(zone)
		task := core.Task{ID: id, Title: title, Description: desc, ParentID: parent, Status: core.Status(title),
			Autopilot: autopilot, Profile: desc, CWD: id + desc, CreatedBy: core.ParseBy(parent), CreatedAt: at, UpdatedAt: at,
			Archived: autopilot, Halted: !autopilot, Queued: queued}
		if autopilot {
			task.ArchivedAt = at
		}
		assertSameJSON(t, 0, task)
	})
}

func assertSameJSON(t testing.TB, i int, task core.Task) {
	t.Helper()
	want, werr := json.Marshal(task)
	got, gerr := appendTask([]byte("prefix"), &task)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("task %d: json.Marshal error %v, appendTask error %v", i, werr, gerr)
	}
	if werr != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("task %d: appendTask dropped what it appended to", i)
	}
	if got = got[len("prefix"):]; !bytes.Equal(got, want) {
		t.Fatalf("task %d differs from json.Marshal\n got: %s\nwant: %s", i, got, want)
	}
}

func trickyTasks() []core.Task {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891000000, time.UTC)
	return []core.Task{
		{},
		{ID: "k3f9qa", Title: "Split the auth module", Status: core.StatusTodo, Profile: "mock", CWD: "/src",
			CreatedBy: core.ParseBy("person:operator"), CreatedAt: at, UpdatedAt: at},
		{ID: "c41d22", Title: `quotes " and \ back`, Description: "tab\tnl\ncr\rbs\bff\f nul\x00 us\x1f del\x7f",
			ParentID: "k3f9qa", Status: core.StatusInProgress, Autopilot: true, CreatedAt: at, UpdatedAt: at.Add(time.Nanosecond)},
		{ID: "html22", Title: "<script>alert('x') && y</script>", Description: "\u2028\u2029 \ufffd é 日本 🦀",
			CreatedAt: at.In(time.FixedZone("IST", 5*3600+1800)), UpdatedAt: at.In(time.FixedZone("PST", -8*3600))},
		{ID: "bad8ut", Title: "\xff\xfe invalid \xc3", Description: "\xed\xa0\x80 surrogate",
			CreatedAt: at, UpdatedAt: at, Archived: true, ArchivedAt: at.Add(time.Hour)},
		{ID: "whole2", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 100, time.UTC)},
		{ID: "sess22", Halted: true, TitlePending: true, Queued: 7, CreatedAt: at, UpdatedAt: at,
			Session: &core.SessionInfo{ID: "s1", TaskID: "sess22", Profile: "claude", State: core.SessionRunning,
				AgentSessionID: "<a&b>", PID: 4242, Error: "line\nline", Turns: 3, CreatedAt: at, UpdatedAt: at},
			PendingQuestion: &core.QuestionInfo{ID: "q1", Kind: core.QuestionParent, Status: core.QuestionPending,
				Text: "which <one>?", AskedAt: at, ParentTaskID: "k3f9qa",
				Questions: []core.QuestionItem{{Prompt: "pick", Options: []core.QuestionOption{{Label: "a"}, {Label: "b", Description: "bee"}}}}}},
		{ID: "year00", CreatedAt: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{ID: "year-1", CreatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "zone24", CreatedAt: at.In(time.FixedZone("far", 24*3600))},
		{ID: "zone23", CreatedAt: at.In(time.FixedZone("near", 23*3600+59*60+59))},
		{ID: "arch10", ArchivedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "neg", Queued: -5, CreatedAt: time.Unix(0, 0).UTC()},
	}
}

var pieces = []string{"", "a", "Z", "0", " ", "\"", "\\", "/", "<", ">", "&", "\n", "\r", "\t", "\b", "\f",
	"\x00", "\x01", "\x1f", "\x7f", "é", "日本", "🦀", "\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "\xed\xa0\x80",
	"\xe2\x80", "k3f9qa", "Split the auth module", "/home/user/src"}

func randomString(rng *rand.Rand) string {
	var sb strings.Builder
	for range rng.IntN(8) {
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

var zones = []*time.Location{time.UTC, time.Local, time.FixedZone("a", 3600), time.FixedZone("b", -(9*3600 + 30*60)),
	time.FixedZone("c", 45), time.FixedZone("d", 25*3600)}

func randomTime(rng *rand.Rand) time.Time {
	switch rng.IntN(10) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(rng.IntN(12000)-1000, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	t := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9))
	if rng.IntN(3) == 0 {
		t = t.Truncate(time.Duration(1) * time.Millisecond)
	}
	return t.In(zones[rng.IntN(len(zones))])
}

func randomTask(rng *rand.Rand) core.Task {
	t := core.Task{ID: randomString(rng), Title: randomString(rng), Description: randomString(rng),
		Status: core.Statuses[rng.IntN(len(core.Statuses))], Autopilot: rng.IntN(2) == 0, Profile: randomString(rng),
		CWD: randomString(rng), CreatedBy: core.ParseBy(randomString(rng)), CreatedAt: randomTime(rng), UpdatedAt: randomTime(rng),
		Archived: rng.IntN(2) == 0, Halted: rng.IntN(2) == 0, TitlePending: rng.IntN(2) == 0, Queued: rng.IntN(20)}
	if rng.IntN(2) == 0 {
		t.ParentID = randomString(rng)
	}
	if rng.IntN(3) == 0 {
		t.ArchivedAt = randomTime(rng)
	}
	if rng.IntN(5) == 0 {
		t.Session = &core.SessionInfo{ID: randomString(rng), State: core.SessionCompleted, Error: randomString(rng),
			PID: rng.IntN(1 << 20), CreatedAt: randomTime(rng)}
	}
	if rng.IntN(5) == 0 {
		t.PendingQuestion = &core.QuestionInfo{ID: randomString(rng), Text: randomString(rng), AskedAt: randomTime(rng)}
	}
	if rng.IntN(2) == 0 {
		t.Assignee = &core.Ref{Kind: "role", Name: randomString(rng)}
	}
	if rng.IntN(3) == 0 {
		t.HandedBy = &core.Ref{Kind: core.RefKind(randomString(rng)), Name: randomString(rng)}
	}
	if rng.IntN(5) == 0 {
		t.Stalled = &core.Stall{Reason: "Stalled", From: core.ParseBy(randomString(rng)), Detail: randomString(rng), At: randomTime(rng)}
	}
	t.Surface, t.Waiting, t.YourTurn = randomString(rng), randomString(rng), rng.IntN(2) == 0
	t.Interrupted = rng.IntN(3) == 0
	for range rng.IntN(3) {
		t.BlockedBy = append(t.BlockedBy, randomString(rng))
	}
	if rng.IntN(4) == 0 {
		t.BlockedBy = []string{}
	}
	if rng.IntN(3) == 0 {
		spend := func() core.Spend {
			return core.Spend{Tokens: rng.Int64N(1 << 40), Input: rng.Int64N(1 << 30), Output: rng.Int64N(1000), Thought: rng.Int64N(2),
				CacheRead: rng.Int64N(1 << 20), CacheWrite: rng.Int64N(9), Cost: randomFloat(rng), Currency: randomString(rng)}
		}
		t.Usage = &core.TaskUsage{Own: spend(), Tree: spend(), Turns: rng.IntN(100), ContextUsed: rng.Int64N(1 << 20), ContextSize: rng.Int64N(1 << 21)}
	}
	if rng.IntN(4) == 0 {
		t.Budget = &core.BudgetInfo{Holder: randomString(rng), Amount: core.Amount{Kind: randomString(rng), Value: randomFloat(rng)},
			Spent: randomFloat(rng), Remaining: randomFloat(rng), Reached: rng.IntN(2) == 0, Noticed: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			t.Budget.Amount.Currency, t.Budget.SetBy = randomString(rng), core.ParseBy(randomString(rng))
		}
	}
	return t
}

// randomFloat draws costs and amounts of every size encoding/json writes
// differently: zero, plain decimals, tiny and huge ones in exponent form.
func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return float64(rng.Int64N(1_000_000)) / 1e6
	case 2:
		return rng.Float64() * 1e-7
	case 3:
		return rng.Float64() * 1e25
	case 4:
		return -rng.Float64() * 100
	}
	return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
}
