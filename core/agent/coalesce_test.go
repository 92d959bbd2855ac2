package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
)

func chunkLine(kind, text string) string {
	t, _ := json.Marshal(text)
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"` + kind +
		`","content":{"type":"text","text":` + string(t) + `}}}}`
}

// coalesceCases are pairs of lines and whether they may join.
var coalesceCases = []struct {
	a, b string
	join bool
}{
	{chunkLine("agent_message_chunk", "Hello, "), chunkLine("agent_message_chunk", "world"), true},
	{chunkLine("agent_thought_chunk", "hm"), chunkLine("agent_thought_chunk", "m\n\t\"q\" \\ é 😀"), true},
	{chunkLine("agent_message_chunk", "a"), chunkLine("agent_thought_chunk", "b"), false},
	{chunkLine("agent_message_chunk", "a"), strings.Replace(chunkLine("agent_message_chunk", "b"), `"s1"`, `"s2"`, 1), false},
	// a surrogate pair split over two chunks decodes to two U+FFFD apart
	{chunkLine("agent_message_chunk", "a") + "", strings.Replace(chunkLine("agent_message_chunk", "X"), `"X"`, `"\ude00"`, 1), false},
	{strings.Replace(chunkLine("agent_message_chunk", "X"), `"X"`, `"\ud83d"`, 1), chunkLine("agent_message_chunk", "b"), false},
	// a rune split over two chunks
	{strings.Replace(chunkLine("agent_message_chunk", "X"), "X", "\xf0\x9f", 1), strings.Replace(chunkLine("agent_message_chunk", "X"), "X", "\x98\x80", 1), false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","text":"b"}}}}`, chunkLine("agent_message_chunk", "c"), false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","Text":"a"}}}}`, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","Text":"b"}}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","text":"a"}}}}`, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","text":"b"}}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","content":{"type":"text","text":"a"}}}}`, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","content":{"type":"text","text":"b"}}}}`, false},
	// _meta and anything else the same on both sides travels along
	{`{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"k":1},"sessionId":"s1","update":{"content":{"text":"a","type":"text","annotations":{"priority":1}},"sessionUpdate":"agent_message_chunk"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"k":1},"sessionId":"s1","update":{"content":{"text":"bc","type":"text","annotations":{"priority":1}},"sessionUpdate":"agent_message_chunk"}}}`, true},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"k":1},"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"k":2},"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}`, false},
	// the same prefix and suffix around something that is not a string
	{chunkLine("agent_message_chunk", "a"), strings.Replace(chunkLine("agent_message_chunk", "X"), `"X"`, `"b","x":"y"`, 1), false},
}

// A join decodes to the first line with the texts joined: the SDK hands
// the engine what it would have, in one notification.
func TestCoalesceKeepsMeaning(t *testing.T) {
	for _, tc := range coalesceCases {
		if got := checkJoin(t, []byte(tc.a), []byte(tc.b)); got != tc.join {
			t.Errorf("joined %v, want %v:\n%s\n%s", got, tc.join, tc.a, tc.b)
		}
	}
}

func FuzzCoalesce(f *testing.F) {
	for _, tc := range coalesceCases {
		f.Add([]byte(tc.a), []byte(tc.b))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
		if !json.Valid(a) {
			return
		}
		checkJoin(t, a, b)
	})
}

// checkJoin joins b to a if the coalescer will, checks the join's meaning
// and reports whether it joined.
func checkJoin(t *testing.T, a, b []byte) bool {
	t.Helper()
	var c coalescer
	if !c.start(a) || !c.add(b) {
		return false
	}
	joined := c.finish()
	var na, nb, nj acp.SessionNotification
	for _, d := range []struct {
		line []byte
		n    *acp.SessionNotification
	}{{a, &na}, {b, &nb}, {joined, &nj}} {
		var msg wireMessage
		if err := json.Unmarshal(d.line, &msg); err != nil {
			t.Fatalf("joined lines that do not decode (%v):\n%s\n%s", err, a, b)
		}
		if err := json.Unmarshal(msg.Params, d.n); err != nil {
			t.Fatalf("joined lines the SDK rejects (%v):\n%s\n%s", err, a, b)
		}
	}
	text := func(n *acp.SessionNotification) *string {
		switch u := n.Update; {
		case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
			return &u.AgentMessageChunk.Content.Text.Text
		case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Content.Text != nil:
			return &u.AgentThoughtChunk.Content.Text.Text
		}
		t.Fatalf("joined a line that is no text chunk:\n%s", a)
		return nil
	}
	want := *text(&na) + *text(&nb)
	if got := *text(&nj); got != want {
		t.Fatalf("joined text %q, want %q:\n%s\n%s", got, want, a, b)
	}
	*text(&nj), *text(&na), *text(&nb) = "", "", ""
	if !reflect.DeepEqual(nj, na) || !reflect.DeepEqual(na, nb) {
		t.Fatalf("the join differs from its lines but for the text:\n%s\n%s\n%s", a, b, joined)
	}
	return true
}

// Chunks already read pass as one notification per run of one entry's
// chunks; the order of everything is kept, each notification passed is
// counted in flight once, and the texts are whole.
func TestLineGuardCoalescesChunks(t *testing.T) {
	var in strings.Builder
	var want []string
	for i := 0; i < 1000; i++ {
		s := fmt.Sprintf("c%d ", i)
		in.WriteString(chunkLine("agent_message_chunk", s) + "\n")
		want = append(want, "agent:"+s)
		if i == 500 {
			in.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls"}}}` + "\n")
			want = append(want, "tool")
			in.WriteString("\n" + chunkLine("agent_thought_chunk", "hm") + "\r\n")
			want = append(want, "thought:hm")
		}
	}
	g, _ := newGuard(strings.NewReader(in.String()))
	g.flow.close() // counted, never waited on: nothing handles them here
	out, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, MaxLine+1)
	for sc.Scan() {
		lines++
		var msg wireMessage
		var n acp.SessionNotification
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("line %s: %v", sc.Bytes(), err)
		}
		if err := json.Unmarshal(msg.Params, &n); err != nil {
			t.Fatalf("params %s: %v", msg.Params, err)
		}
		switch u := n.Update; {
		case u.AgentMessageChunk != nil:
			got = append(got, "agent:"+u.AgentMessageChunk.Content.Text.Text)
		case u.AgentThoughtChunk != nil:
			got = append(got, "thought:"+u.AgentThoughtChunk.Content.Text.Text)
		case u.ToolCall != nil:
			got = append(got, "tool")
		}
	}
	if lines >= 500 {
		t.Errorf("%d lines passed for 1002 read at once, want them joined", lines)
	}
	if g.flow.pending != lines {
		t.Errorf("%d counted in flight for %d lines passed", g.flow.pending, lines)
	}
	if joinRuns(got) != joinRuns(want) {
		t.Fatalf("passed\n%s\nwant\n%s", joinRuns(got), joinRuns(want))
	}
}

// joinRuns joins consecutive texts of one kind, as the recorder does.
func joinRuns(items []string) string {
	var b strings.Builder
	last := ""
	for _, it := range items {
		kind, text, _ := strings.Cut(it, ":")
		if kind != last {
			b.WriteString("\n" + kind + ":")
			last = kind
		}
		b.WriteString(text)
	}
	return b.String()
}

// A line that matches a chunk line around its text but is not JSON is
// not joined: the guard reports it as garbage.
func TestLineGuardDoesNotJoinGarbage(t *testing.T) {
	bad := strings.Replace(chunkLine("agent_message_chunk", "X"), `"X"`, `"a"b"`, 1)
	in := chunkLine("agent_message_chunk", "one") + "\n" + bad + "\n"
	var garbage []string
	g := &lineGuard{r: bufio.NewReaderSize(strings.NewReader(in), 64*1024), onGarbage: func(s string) { garbage = append(garbage, s) },
		onFault: func(string) {}, flow: newFlow(), ready: make(chan struct{})}
	close(g.ready)
	out, _ := io.ReadAll(g)
	if string(out) != chunkLine("agent_message_chunk", "one")+"\n" || len(garbage) != 1 || garbage[0] != bad {
		t.Fatalf("passed %q, garbage %q", out, garbage)
	}
}

// Over a pipe, the guard waits for more chunks with a read deadline: a
// chunk with nothing after it still comes out (the wait ends), the
// deadline is not the end of the stream, and what the agent writes later
// is read as before.
func TestLineGuardWaitEndsWithoutMore(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	stdout := &eofReader{r: pr, done: make(chan struct{})}
	g := &lineGuard{r: bufio.NewReaderSize(stdout, 64*1024), onGarbage: func(string) {}, onFault: func(string) {},
		flow: newFlow(), ready: make(chan struct{}), deadline: pr.SetReadDeadline}
	close(g.ready)
	g.flow.close()
	out := bufio.NewReader(g)
	for _, text := range []string{"first", "second"} {
		if _, err := fmt.Fprintln(pw, chunkLine("agent_message_chunk", text)); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil || line != chunkLine("agent_message_chunk", text)+"\n" {
			t.Fatalf("read %q, %v", line, err)
		}
		select {
		case <-stdout.done:
			t.Fatal("the wait's deadline ended the stream")
		default:
		}
	}
	pw.Close()
	if _, err := out.ReadString('\n'); err != io.EOF {
		t.Fatalf("after the agent's end: %v, want EOF", err)
	}
}

// readCounter counts its reader's reads and signals each one.
type readCounter struct {
	r     io.Reader
	mu    sync.Mutex
	reads int
	read  chan struct{}
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.reads++
		c.mu.Unlock()
		select {
		case c.read <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (c *readCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// An agent streaming a token at a time: after a chunk the guard sleeps
// through its window and reads what came meanwhile at once (ADR 0063),
// rather than once per chunk; the chunks pass joined, text whole. A burst
// (more than denseJoin in one join) turns the sleeping off until a join
// takes less.
func TestLineGuardSleepsThroughSparseStream(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	counted := &readCounter{r: pr, read: make(chan struct{}, 1)}
	stdout := &eofReader{r: counted, done: make(chan struct{})}
	g := &lineGuard{r: bufio.NewReaderSize(stdout, 64*1024), onGarbage: func(string) {}, onFault: func(string) {},
		flow: newFlow(), ready: make(chan struct{}), deadline: pr.SetReadDeadline,
		// A whole window after each join's first chunk, not the shared
		// beat's, which may end a moment after it.
		windowEnd: func(now time.Time) time.Time { return now.Add(joinWait) }}
	close(g.ready)
	g.flow.close()
	passed := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(g)
		sc.Buffer(nil, MaxLine+1)
		for sc.Scan() {
			passed <- sc.Text()
		}
		close(passed)
	}()
	texts := func(n int, from int) []string {
		var ts []string
		for i := range n {
			ts = append(ts, fmt.Sprintf("t%d ", from+i))
		}
		return ts
	}
	// textOf reads passed lines until their texts join to want.
	textOf := func(want string) int {
		t.Helper()
		var got strings.Builder
		lines := 0
		for got.Len() < len(want) {
			line, ok := <-passed
			if !ok {
				t.Fatalf("stream ended with %q of %q", got.String(), want)
			}
			var msg wireMessage
			var n acp.SessionNotification
			if json.Unmarshal([]byte(line), &msg) != nil || json.Unmarshal(msg.Params, &n) != nil || n.Update.AgentMessageChunk == nil {
				t.Fatalf("passed %q", line)
			}
			got.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
			lines++
		}
		if got.String() != want {
			t.Fatalf("passed text %q, want %q", got.String(), want)
		}
		return lines
	}

	sparse := texts(10, 0)
	fmt.Fprintln(pw, chunkLine("agent_message_chunk", sparse[0]))
	<-counted.read // the guard has the first chunk and waits
	before := counted.count()
	for _, s := range sparse[1:] {
		time.Sleep(time.Millisecond)
		fmt.Fprintln(pw, chunkLine("agent_message_chunk", s))
	}
	lines := textOf(strings.Join(sparse, ""))
	if reads := counted.count() - before; reads > 4 {
		t.Errorf("%d reads for 9 chunks written 1 ms apart within the %v window, want them read at once", reads, joinWait)
	}
	if lines > 4 {
		t.Errorf("%d notifications passed for 10 chunks, want them joined", lines)
	}
	if g.dense {
		t.Error("a stream of single tokens marked dense")
	}

	// A burst: more than denseJoin written at once (within the pipe's
	// and the reader's buffers, so it is one join whatever the timing).
	var burst strings.Builder
	many := texts(200, 100)
	for _, s := range many {
		burst.WriteString(chunkLine("agent_message_chunk", s) + "\n")
	}
	if burst.Len() < denseJoin+1024 || burst.Len() > 60<<10 {
		t.Fatalf("burst of %d bytes", burst.Len())
	}
	if _, err := io.WriteString(pw, burst.String()); err != nil {
		t.Fatal(err)
	}
	if lines := textOf(strings.Join(many, "")); lines != 1 {
		t.Errorf("a burst written at once passed as %d notifications, want 1", lines)
	}
	if !g.dense {
		t.Error("a burst of 200 chunks did not mark the stream dense")
	}
	// A single token after it: the stream is sparse again.
	fmt.Fprintln(pw, chunkLine("agent_message_chunk", "last"))
	textOf("last")
	fmt.Fprintln(pw, chunkLine("agent_message_chunk", "after"))
	textOf("after")
	if g.dense {
		t.Error("single tokens after a burst still marked dense")
	}
}

// stringBody agrees with encoding/json on what a string's body may be,
// for the UTF-8 texts a join accepts.
func FuzzStringBody(f *testing.F) {
	for _, s := range []string{"", "plain", `a\"b`, `\\`, `\`, `\u00e9`, `\u00g9`, `\u12`, "tab\tin", `\n\r\t\b\f\/`, `"`, `\x`, "é"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		want := json.Valid([]byte(`"` + string(b) + `"`))
		if got := stringBody(b); got != want {
			t.Fatalf("stringBody(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// A join's window ends on the beat every guard shares: the next multiple
// of joinWait on the wall clock, after now and at most joinWait later.
func TestWindowEndsOnTheSharedBeat(t *testing.T) {
	base := windowEnd(time.Date(2026, 12, 1, 14, 0, 0, 7, time.UTC)) // a beat
	for _, off := range []time.Duration{0, 1, joinWait / 2, joinWait - 1, joinWait, 7*joinWait + 3*time.Millisecond} {
		now := base.Add(off)
		end := windowEnd(now)
		if !end.After(now) || end.Sub(now) > joinWait || end.UnixNano()%int64(joinWait) != 0 {
			t.Errorf("windowEnd(%v) = %v: want the next multiple of %v after it", now, end, joinWait)
		}
	}
	a, b := windowEnd(base.Add(time.Millisecond)), windowEnd(base.Add(joinWait-time.Millisecond))
	if !a.Equal(b) {
		t.Errorf("two joins begun in one beat end at %v and %v", a, b)
	}
}
